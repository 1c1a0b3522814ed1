// Package kernel holds the Linux primitives an emulated fabric is built
// from: named network namespaces, veth pairs born in their namespaces,
// addresses, tc shaping (tbf, optionally under netem), qdisc statistics,
// and a probe of what the running kernel offers.
//
// Everything here talks to the kernel directly (netlink, ioctl, mount),
// never through `ip`/`tc` processes, because a 1,056-host Dragonfly needs
// thousands of operations and process spawning would dominate bring-up.
//
// Namespaces are the unit of teardown: deleting a namespace returns at once
// and the kernel reclaims its veths later, whereas deleting a veth takes
// ~19 ms. Nothing here deletes veths one by one.
package kernel
