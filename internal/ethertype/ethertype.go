// Package ethertype is ethfab's one table of the EtherTypes its frames
// carry, so a rule, a filter and a frame cannot disagree about one.
//
// The two IEEE 802 local experimental EtherTypes (IEEE Std 802, "Local
// Experimental EtherType 1" and "2") are free for any protocol on one
// network, which is what an emulated fabric is.
package ethertype

const (
	// DMP is IEEE 802 local experimental EtherType 1, which seed 000 (§IV)
	// uses for the Directory-less MAC Protocol: a host's request for its
	// pseudo-MAC, answered by its access switch.
	DMP = 0x88B5
	// Traffic is IEEE 802 local experimental EtherType 2, which ethfab uses
	// for the frames it routes like data: the traffic engine's frames
	// (traffic.Encode), the controller verifier's probes and
	// `ethfab ping`. No rule matches it except the destination routing.
	Traffic = 0x88B6
	// OpenMX is Open-MX's EtherType (Open-MX's omx_hdr, ETH_P_OMX), which
	// the host agent's announcer and connect check speak.
	OpenMX = 0x86DF
	// CNM is IEEE 802.1Qau's congestion notification message (seeds 003
	// and 004); 0x22E9, its CN-TAG, is not used.
	CNM = 0x22E7
)
