package dissector

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/capture"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/ether"
	"github.com/ethfab/ethfab/hostagent/omx"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/qcn"
	"github.com/ethfab/ethfab/traffic"
)

// The dissector reads every field of every kind of frame ethfab sends,
// as ethfab's own code builds them, written to a pcap by ethfab capture's
// writer and decoded by tshark. CI installs tshark (scripts/provision.sh),
// so there a missing tshark fails the test rather than skipping it.
func TestDissector(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		if os.Getenv("CI") == "" {
			t.Skip("needs tshark")
		}
		t.Fatal("tshark is not installed (scripts/provision.sh installs it)")
	}
	a := ether.MAC{0x02, 0, 0, 0x01, 0x02, 0x01}
	b := ether.MAC{0x02, 0, 0, 0x03, 0x00, 0x02}

	tf := make([]byte, 100)
	if err := traffic.Encode(tf, &traffic.Header{Dst: b, Src: a, Flags: traffic.FlagMeasured, Run: 0xabcdef01, SrcHost: 7, DstHost: 42, Seq: 123456789, SendNs: 987654321}); err != nil {
		t.Fatal(err)
	}
	ping := make([]byte, 60)
	ether.Header{Dst: b, Src: a, EtherType: ethertype.Traffic}.Put(ping)
	binary.BigEndian.PutUint32(ping[14:], 3)
	binary.BigEndian.PutUint32(ping[18:], 9)
	cn, err := (&qcn.CNM{Dst: a, Src: b, Fbq: 37, CPSwitch: b, CPPort: 5, QOffset: -3, QDelta: 12, VictimDst: b, VictimLen: 100, MSDU: tf[12:76]}).Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	frames := [][]byte{
		dmp.Request(a, 0x1234abcd, 2),
		omx.Announcement{Header: ether.Header{Dst: ether.Broadcast, Src: a}, PeerIndex: 17, NIC: a, Serial: 0xdeadbeef}.Marshal(),
		omx.Connect{Header: ether.Header{Dst: b, Src: a}, Reply: true, PeerIndex: 4, Seq: 77, Serial: 0xfeedf00d}.Marshal(),
		tf, ping, cn,
	}
	file := filepath.Join(t.TempDir(), "ethfab.pcap")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	w, err := capture.NewPcap(f)
	if err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		if err := w.Frame(time.Unix(1_800_000_000, int64(i)), fr, len(fr)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	out, err := exec.Command("tshark", "-X", "lua_script:ethfab.lua", "-r", file, "-T", "json").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var pkts []struct {
		Source struct {
			Layers map[string]json.RawMessage `json:"layers"`
		} `json:"_source"`
	}
	if err := json.Unmarshal(out, &pkts); err != nil {
		t.Fatalf("tshark's JSON: %v\n%.500s", err, out)
	}
	if len(pkts) != len(frames) {
		t.Fatalf("tshark read %d frames, want %d", len(pkts), len(frames))
	}
	want := []struct {
		layer  string
		fields map[string]string
	}{
		{"ethfab_dmp", map[string]string{"ethfab_dmp.version": "1", "ethfab_dmp.type": "1", "ethfab_dmp.attempt": "2", "ethfab_dmp.txid": "0x1234abcd"}},
		{"ethfab_omx", map[string]string{"ethfab_omx.peer_index": "17", "ethfab_omx.type": "0x01", "ethfab_omx.nic": "02:00:00:01:02:01", "ethfab_omx.serial": "0xdeadbeef"}},
		{"ethfab_omx", map[string]string{"ethfab_omx.peer_index": "4", "ethfab_omx.type": "0x41", "ethfab_omx.seq": "77", "ethfab_omx.serial": "0xfeedf00d"}},
		{"ethfab_traffic", map[string]string{"ethfab_traffic.magic": "EFTR", "ethfab_traffic.version": "1", "ethfab_traffic.run": "0xabcdef01",
			"ethfab_traffic.src_host": "7", "ethfab_traffic.dst_host": "42", "ethfab_traffic.seq": "123456789", "ethfab_traffic.send_ns": "987654321"}},
		{"ethfab_ping", map[string]string{"ethfab_ping.src_host": "3", "ethfab_ping.dst_host": "9"}},
		{"ethfab_cnm", map[string]string{"ethfab_cnm.fbq": "37", "ethfab_cnm.cp_switch": "02:00:00:03:00:02", "ethfab_cnm.cp_port": "5",
			"ethfab_cnm.qoffset": "-3", "ethfab_cnm.qdelta": "12", "ethfab_cnm.victim_dst": "02:00:00:03:00:02", "ethfab_cnm.victim_len": "100"}},
	}
	for i, w := range want {
		raw, ok := pkts[i].Source.Layers[w.layer]
		if !ok {
			t.Errorf("frame %d: no %s layer: %s", i, w.layer, keys(pkts[i].Source.Layers))
			continue
		}
		got := map[string]any{}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		flat := map[string]string{}
		flatten(got, flat)
		for k, v := range w.fields {
			if flat[k] != v {
				t.Errorf("frame %d (%s): %s = %q, want %q (all: %v)", i, w.layer, k, flat[k], v, flat)
			}
		}
	}
}

// flatten collects the string fields of tshark's nested tree.
func flatten(m map[string]any, out map[string]string) {
	for k, v := range m {
		switch x := v.(type) {
		case string:
			out[k] = x
		case map[string]any:
			flatten(x, out)
		}
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
