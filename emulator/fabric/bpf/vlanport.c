// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// ethfab's tagged host ports (seed 002's "T" ports, routing.vlan.
// tagged_hosts): a host whose switch port is a tagged member of its
// VLANs sends and receives 802.1Q frames, as a host with a VLAN interface
// does. This kernel has no 8021q module, so three tc programs stand in:
//
//   ethfab_vlan_push   host side, egress: every frame leaves tagged with
//                      VLAN ID vid, before the host link's tbf queues it,
//                      whose size table charges the 4 bytes as a wire
//                      carries them. Frames already tagged (the learning
//                      broadcasts) pass as they are, and the size table
//                      charges them 4 bytes too many.
//   ethfab_vlan_pop    host side, ingress: the kernel has moved a received
//                      frame's tag into the skb before tc; this drops it,
//                      whatever the VLAN, so the host's stack takes the
//                      frame as a VLAN interface of that VLAN would hand it
//                      over (a host with one in every VLAN, as seed 002's
//                      learning procedure has). Packet sockets (the
//                      traffic sinks) saw it first, tag in auxdata.
//   ethfab_vlan_taken  switch side, ingress (userspace datapath): Open
//                      vSwitch's packet socket has the tagged frame by
//                      now; without this the kernel, which has no VLAN
//                      device for it, would count it dropped on the
//                      host link (every frame a tagged host sends).
//
// Build: make bpf (clang -O2 -target bpf); the object is committed.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8

// The push passes every frame on to the egress's next program, the
// traffic engine's send stamp (hostagent/traffic/bpf/stamp.c): with tcx,
// TC_ACT_OK would end the programs there, and the engine, with no kernel
// stamp, would time the frame from its own send call (3-5 µs earlier).
#define NEXT TC_ACT_UNSPEC

// The VLAN ID the host's frames carry: set per host before loading.
volatile const __u16 vid = 0;

SEC("tc")
int ethfab_vlan_push(struct __sk_buff *skb)
{
	__u8 et[2];
	if (bpf_skb_load_bytes(skb, 12, et, 2) < 0)
		return NEXT;
	__u16 type = (et[0] << 8) | et[1];
	if (type == ETH_P_8021Q || type == ETH_P_8021AD || skb->vlan_present)
		return NEXT;
	// In the skb, as Linux's 802.1Q interface puts it where the device
	// inserts tags (a veth hands it to its peer so): no byte moves, where
	// writing it into the bytes took bpf_skb_change_head and a 12-byte
	// move. (Not a latency: T-U measured 13 µs against U-U's 10 either
	// way, one lab, eBPF datapath; the pairs' spread is elsewhere.) The
	// host link's tbf charges the 4 bytes through a size table
	// (kernel.ChargeQueuedLength).
	if (bpf_skb_vlan_push(skb, __builtin_bswap16(ETH_P_8021Q), vid) < 0)
		return TC_ACT_SHOT;
	return NEXT;
}

SEC("tc")
int ethfab_vlan_pop(struct __sk_buff *skb)
{
	if (skb->vlan_present)
		bpf_skb_vlan_pop(skb);
	return TC_ACT_OK;
}

SEC("tc")
int ethfab_vlan_taken(struct __sk_buff *skb)
{
	return skb->vlan_present ? TC_ACT_SHOT : TC_ACT_OK;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
