package hostagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/omx"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
)

// These checks read the wire with tcpdump, a decoder nobody here wrote, so
// a mistake shared by the agent's encoder and its own parser cannot hide.

func needTcpdump(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tcpdump"); err != nil {
		t.Skip("needs tcpdump")
	}
}

// capture is a tcpdump writing a pcap inside a host's namespace.
type capture struct {
	cmd    *exec.Cmd
	file   string
	stderr *bytes.Buffer
	done   chan error
}

// startCapture runs tcpdump on iface of namespace ns and returns once it
// is listening, so nothing sent afterwards is missed. args are extra
// tcpdump arguments (direction, filter).
func startCapture(t *testing.T, ns, iface string, args ...string) *capture {
	t.Helper()
	file := filepath.Join(t.TempDir(), ns+".pcap")
	// -Z root: Debian's tcpdump would otherwise switch to its own user and
	// could not write into the test's root-only temp dir. -U writes every
	// packet at once, so SIGINT loses nothing.
	a := append([]string{"netns", "exec", ns, "tcpdump", "-i", iface, "-w", file, "-U", "--immediate-mode", "-nn", "-Z", "root", "-s", "256"}, args...)
	cmd := exec.Command("ip", a...)
	pr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("tcpdump in %s: %v", ns, err)
	}
	c := &capture{cmd: cmd, file: file, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	listening := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		said := false
		for sc.Scan() {
			c.stderr.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), "listening on") {
				said = true
				close(listening)
			}
		}
		c.done <- cmd.Wait()
	}()
	// ip netns exec execs tcpdump in place, so this PID is tcpdump's.
	t.Cleanup(func() { c.stop(t) })
	select {
	case <-listening:
	case err := <-c.done:
		c.done <- err
		t.Fatalf("tcpdump in %s exited before listening: %v", ns, err)
	case <-time.After(15 * time.Second):
		t.Fatalf("tcpdump in %s not listening after 15 s", ns)
	}
	return c
}

// stop ends tcpdump with SIGINT (it then flushes and closes the file) and
// waits for it; calling it again does nothing.
func (c *capture) stop(t *testing.T) {
	if c.cmd == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
		t.Errorf("tcpdump %d ignored SIGINT", c.cmd.Process.Pid)
	}
	c.cmd = nil
}

// frame is one packet as tcpdump decoded it: the MACs and EtherType from
// its -e header line, the bytes from its -xx hex dump.
type frame struct {
	src, dst  string
	etherType uint16
	length    int
	raw       []byte
	line      string
}

var (
	reHeader = regexp.MustCompile(`^\S+ ([0-9a-f:]{17}) > ([0-9a-f:]{17}), ethertype .*\(0x([0-9a-f]{4})\), length (\d+)`)
	reHex    = regexp.MustCompile(`^\s+0x[0-9a-f]{4}:\s+([0-9a-f ]+)$`)
)

// frames stops the capture and decodes its file with tcpdump -r.
func (c *capture) frames(t *testing.T) []frame {
	t.Helper()
	c.stop(t)
	out, err := exec.Command("tcpdump", "-r", c.file, "-e", "-xx", "-nn").Output()
	if err != nil {
		t.Fatalf("tcpdump -r %s: %v (capture stderr: %s)", c.file, err, c.stderr)
	}
	fs, err := parseTcpdump(out)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// parseTcpdump reads `tcpdump -e -xx -nn` output. It insists the header
// line and the hex bytes agree, so a misread of either shows.
func parseTcpdump(out []byte) ([]frame, error) {
	var fs []frame
	for _, l := range strings.Split(string(out), "\n") {
		if m := reHeader.FindStringSubmatch(l); m != nil {
			et, _ := strconv.ParseUint(m[3], 16, 16)
			n, _ := strconv.Atoi(m[4])
			fs = append(fs, frame{src: m[1], dst: m[2], etherType: uint16(et), length: n, line: l})
			continue
		}
		if m := reHex.FindStringSubmatch(l); m != nil && len(fs) > 0 {
			b, err := hex.DecodeString(strings.ReplaceAll(m[1], " ", ""))
			if err != nil {
				return nil, fmt.Errorf("hex line %q: %w", l, err)
			}
			fs[len(fs)-1].raw = append(fs[len(fs)-1].raw, b...)
			continue
		}
		if strings.TrimSpace(l) != "" {
			// IPv6 and the like: tcpdump prints no "ethertype" for
			// protocols it decodes; their frames are none of ours.
			fs = append(fs, frame{line: l})
		}
	}
	for _, f := range fs {
		if f.src == "" {
			continue
		}
		if len(f.raw) < 14 {
			return nil, fmt.Errorf("%q: %d bytes in the hex dump", f.line, len(f.raw))
		}
		if macHex(f.raw[0:6]) != f.dst || macHex(f.raw[6:12]) != f.src || uint16(f.raw[12])<<8|uint16(f.raw[13]) != f.etherType {
			return nil, fmt.Errorf("%q disagrees with its bytes % x", f.line, f.raw[:14])
		}
	}
	return fs, nil
}

func macHex(b []byte) string {
	s := make([]string, len(b))
	for i, x := range b {
		s[i] = fmt.Sprintf("%02x", x)
	}
	return strings.Join(s, ":")
}

// ipLinkMAC reads an interface's address with iproute2.
func ipLinkMAC(t *testing.T, ns, iface string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-br", "link", "show", iface).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s link show %s: %v: %s", ns, iface, err, out)
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		t.Fatalf("ip -n %s -br link show %s: %q", ns, iface, out)
	}
	return f[2]
}

// Case c (assign dmp, peer MAC from payload), read off the wire by
// tcpdump inside one host's namespace: the switch's DMP reply comes from
// the host's pseudo-MAC to its original MAC, the host then owns the
// pseudo-MAC (iproute2 says so), and every announcement from another host
// carries in its payload exactly the MAC it is sent from.
func TestTcpdumpDMPAndAnnouncements(t *testing.T) {
	roottest.NeedOVS(t)
	needTcpdump(t)
	lab, eps := upDMPLab(t, "hchk1", "topology.p", "1", "topology.a", "2", "topology.h", "1")
	n := len(eps)
	me := lab.Hosts[0]
	if me.MAC == me.PseudoMAC {
		t.Fatalf("%s starts with its pseudo-MAC %s", me.Name, me.MAC)
	}
	if got := ipLinkMAC(t, me.NetNS, me.Iface); got != me.MAC {
		t.Fatalf("%s has %s before DMP, lab says %s", me.Name, got, me.MAC)
	}
	c := startCapture(t, me.NetNS, me.Iface)

	f, err := OpenFleet(eps, Options{
		DMP: true, DMPBackoff: dmp.Backoff{Timeout: 10 * time.Second},
		Announce: true, Schedule: omx.Schedule{Burst: 2, BurstInterval: 200 * time.Millisecond, Interval: time.Hour}, Jitter: 100 * time.Millisecond,
		PeerMACFrom: addressing.FromPayload, ExpectPeers: n - 1, RecordPeers: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rs, err := f.Run(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if rs[0].Peers != n-1 {
		t.Errorf("%s: %d peers, want %d", me.Name, rs[0].Peers, n-1)
	}
	if got := ipLinkMAC(t, me.NetNS, me.Iface); got != me.PseudoMAC {
		t.Errorf("ip link: %s has %s after DMP, want its pseudo-MAC %s", me.Name, got, me.PseudoMAC)
	}

	fs := c.frames(t)
	others := map[string]string{} // pseudo-MAC -> host
	for _, h := range lab.Hosts[1:] {
		others[h.PseudoMAC] = h.Name
	}
	var requests, replies int
	heard := map[string]int{}
	for _, fr := range fs {
		switch fr.etherType {
		case ethertype.DMP:
			switch {
			case fr.src == me.MAC && fr.dst == me.MAC:
				requests++
			case fr.src == me.PseudoMAC && fr.dst == me.MAC:
				replies++
			default:
				t.Errorf("DMP frame neither %s's request nor its reply: %s", me.Name, fr.line)
			}
		case ethertype.OpenMX:
			if len(fr.raw) < 44 || fr.raw[16] != 1 {
				continue // connect frames: not asked for, but not ours to judge
			}
			if fr.dst != "ff:ff:ff:ff:ff:ff" {
				t.Errorf("announcement not broadcast: %s", fr.line)
			}
			// nic_id_hi holds the MAC's upper 16 bits in its low half.
			if fr.raw[32] != 0 || fr.raw[33] != 0 {
				t.Errorf("nic_id_hi % x has bits above 16: %s", fr.raw[32:36], fr.line)
			}
			payload := macHex(append(append([]byte{}, fr.raw[34:36]...), fr.raw[36:40]...))
			if payload != fr.src {
				t.Errorf("announcement from %s carries %s in its payload", fr.src, payload)
			}
			if fr.src == me.PseudoMAC {
				continue // our own, outgoing
			}
			if _, ok := others[fr.src]; !ok {
				t.Errorf("announcement from %s, no other host's pseudo-MAC", fr.src)
				continue
			}
			heard[fr.src]++
		}
	}
	if requests == 0 || replies == 0 {
		t.Errorf("captured %d DMP requests (%s -> itself) and %d replies (%s -> %s), want both", requests, me.MAC, replies, me.PseudoMAC, me.MAC)
	}
	for mac, name := range others {
		if heard[mac] == 0 {
			t.Errorf("no announcement from %s (%s) captured", name, mac)
		}
	}
	t.Logf("%s: %d frames captured; DMP %d requests, %d replies; announcements from %d of %d other hosts",
		me.Name, len(fs), requests, replies, len(heard), n-1)
}
