package capture

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric/fabrictest"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel/packet"
)

// Captures on a real lab, read back by tcpdump: a host's interface, a
// switch port and a link between two switches each record the frames
// one host sends another through them, with their EtherType, addresses
// and length; names that denote nothing, or a link of two, are refused
// with what to give instead.
func TestCapture(t *testing.T) {
	roottest.Need(t, "tcpdump")
	lab := fabrictest.UpYAML(t, "hcap", `topology: {kind: custom, switches: [A, B, C], links: [[A, B], [B, C], [A, C], [A, C]], hosts: {A: 1, C: 1}}
routing: {mode: shortest}
ovs: {datapath: ebpf}
`)
	src, dst := lab.Host("Ah0"), lab.Host("Ch0")
	smac, _ := net.ParseMAC(src.MAC)
	dmac, _ := net.ParseMAC(dst.MAC)
	snd, err := packet.OpenSender(src.NetNS, src.Iface)
	if err != nil {
		t.Fatal(err)
	}
	defer snd.Close()
	frame := make([]byte, 100)
	copy(frame, dmac)
	copy(frame[6:], smac)
	frame[12], frame[13] = 0x88, 0xB6 // traffic

	for _, name := range []string{"Ch0", "C:3", "A:4"} {
		// C:3 is C's end of the first A-C link, which shortest paths
		// take; A:4 is A's end of the second link to C, which
		// carries nothing.
		t.Run(name, func(t *testing.T) {
			p, err := Resolve(lab, name)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w, err := NewPcap(&buf)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			done := make(chan int)
			want := 5
			if name == "A:4" {
				want = 0
			}
			c, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				n, err := c.Run(ctx, want, w)
				if err != nil {
					t.Error(err)
				}
				done <- n
			}()
			for range 5 {
				if err := snd.Send(frame); err != nil {
					t.Fatal(err)
				}
			}
			if want == 0 {
				// Nothing to count on: the frames cross the fabric in
				// microseconds, so 300 ms without one is none.
				time.Sleep(300 * time.Millisecond)
				cancel()
			}
			if n := <-done; n != want {
				t.Fatalf("captured %d frames, want %d", n, want)
			}
			file := filepath.Join(t.TempDir(), "c.pcap")
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("tcpdump", "-nn", "-e", "-r", file).CombinedOutput()
			if err != nil {
				t.Fatalf("tcpdump -r: %v\n%s", err, out)
			}
			lines := strings.Count(string(out), "ethertype Unknown (0x88b6), length 100")
			if lines != want || want > 0 && !strings.Contains(string(out), src.MAC+" > "+dst.MAC) {
				t.Errorf("tcpdump read %d traffic frames of 100 bytes from %s to %s, want %d:\n%s", lines, src.MAC, dst.MAC, want, out)
			}
		})
	}

	for name, why := range map[string]string{
		"A-C":   "have 2 links: name one by its port (A:3, A:4)",
		"A-B":   "", // one link: fine
		"B:9":   "switch B has no port 9",
		"Q:1":   "has no switch Q",
		"A:x":   "is not a port number",
		"Zh0":   "not a host, SWITCH:PORT or SWITCH-SWITCH",
		"B-Ah0": "not a host, SWITCH:PORT or SWITCH-SWITCH",
	} {
		_, err := Resolve(lab, name)
		if why == "" && err != nil || why != "" && (err == nil || !strings.Contains(err.Error(), why)) {
			t.Errorf("Resolve(%q): %v, want %q", name, err, why)
		}
	}

	// The text form: one line per frame with its addresses and kind.
	var b bytes.Buffer
	if err := (Text{W: &b}).Frame(time.Unix(0, 0), frame, len(frame)); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, src.MAC+" > "+dst.MAC+" traffic (0x88b6) 100 bytes") {
		t.Errorf("text line %q", got)
	}
}
