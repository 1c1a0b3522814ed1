package ovs

import (
	"reflect"
	"testing"
)

// Samples are ovs-ofctl 3.1 output (-O OpenFlow13).
func TestParseFlows(t *testing.T) {
	out := ` cookie=0x2a, duration=12.345s, table=0, n_packets=7, n_bytes=490, reset_counts priority=10,in_port=1,dl_dst=02:00:00:01:00:01 actions=set_field:02:00:00:01:00:02->eth_src,output:2
 cookie=0x0, duration=1.000s, table=3, n_packets=0, n_bytes=0, idle_timeout=60, priority=0 actions=drop
 cookie=0x0, duration=1.000s, table=0, n_packets=1, n_bytes=60, in_port=2 actions=resubmit(,3)
`
	got, err := parseFlows(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []Flow{
		{Table: 0, Priority: 10, Cookie: 0x2a, Packets: 7, Bytes: 490, Match: "in_port=1,dl_dst=02:00:00:01:00:01", Actions: "set_field:02:00:00:01:00:02->eth_src,output:2"},
		{Table: 3, Priority: 0, Match: "", Actions: "drop"},
		{Table: 0, Priority: 32768, Packets: 1, Bytes: 60, Match: "in_port=2", Actions: "resubmit(,3)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseFlows:\n got %+v\nwant %+v", got, want)
	}
	if _, err := parseFlows(" cookie=0x0, table=0 no-actions-here\n"); err == nil {
		t.Fatal("parseFlows accepted a line without actions")
	}
}

func TestParsePortStats(t *testing.T) {
	out := `OFPST_PORT reply (OF1.3) (xid=0x2): 2 ports
  port  2: rx pkts=5, bytes=350, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=3, bytes=210, drop=1, errs=?, coll=0
           duration=3.912s
  port LOCAL: rx pkts=0, bytes=0, drop=0, errs=0, frame=0, over=0, crc=0
           tx pkts=0, bytes=0, drop=0, errs=0, coll=0
           duration=3.912s
`
	got, err := parsePortStats(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []PortStat{
		{Port: "2", RxPackets: 5, RxBytes: 350, TxPackets: 3, TxBytes: 210, TxDrops: 1},
		{Port: "LOCAL"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parsePortStats:\n got %+v\nwant %+v", got, want)
	}
}

func TestPartition(t *testing.T) {
	var bs []Bridge
	for i := 0; i < 10; i++ {
		bs = append(bs, Bridge{Name: string(rune('a' + i))})
	}
	parts := Partition(bs, 3)
	sizes := []int{len(parts[0]), len(parts[1]), len(parts[2])}
	if !reflect.DeepEqual(sizes, []int{4, 3, 3}) && !reflect.DeepEqual(sizes, []int{3, 3, 4}) && !reflect.DeepEqual(sizes, []int{3, 4, 3}) {
		t.Fatalf("sizes %v", sizes)
	}
	var names string
	for _, p := range parts {
		for _, b := range p {
			names += b.Name
		}
	}
	if names != "abcdefghij" {
		t.Fatalf("partition lost or reordered bridges: %q", names)
	}
	cfgs := PoolConfigs(Config{RunDir: "/r", NetNS: "lab-fab"}, 2)
	if cfgs[1].RunDir != "/r/1" || cfgs[1].NetNS != "lab-fab1" {
		t.Fatalf("PoolConfigs: %+v", cfgs[1])
	}
	if one := PoolConfigs(Config{RunDir: "/r", NetNS: "lab-fab"}, 1); one[0].NetNS != "lab-fab" {
		t.Fatalf("a one-instance pool must keep the netns name: %+v", one[0])
	}
}

func TestDeriveDPID(t *testing.T) {
	a, b := deriveDPID("lab", "s1"), deriveDPID("lab", "s2")
	if a == b || a != deriveDPID("lab", "s1") || a>>48 != 0 {
		t.Fatalf("dpids %x %x", a, b)
	}
}
