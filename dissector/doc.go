// Package dissector holds ethfab's Wireshark dissector, ethfab.lua, for
// DMP, the Open-MX-style announcements and connects, traffic frames and
// pings, and CNMs; its test runs it in tshark on frames ethfab's own code
// builds. Install: cp dissector/ethfab.lua ~/.local/lib/wireshark/plugins/
package dissector
