package ovs

import (
	"bufio"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// ofctl runs ovs-ofctl speaking OpenFlow 1.3 (the only version bridges
// accept) and returns its stdout.
func ofctl(ctx context.Context, args ...string) (string, error) {
	out, err := call(ctx, "ovs-ofctl", append([]string{"-O", "OpenFlow13"}, args...)...)
	return string(out), err
}

// InstallFlows atomically replaces the bridge's flow table with the flows
// in file (ovs-ofctl flow syntax): one OpenFlow bundle, so the switch
// never runs a half-installed rule set. mgmt is Instance.MgmtSocket(...).
// A lab's tables go in over package openflow's connections, 10× faster;
// this is for hand-written flow files, and the reference the binary
// encoding is tested against.
func InstallFlows(ctx context.Context, mgmt, file string) error {
	_, err := ofctl(ctx, "--bundle", "replace-flows", mgmt, file)
	return err
}

// Flow is one entry of dump-flows.
type Flow struct {
	Table    int
	Priority int // 32768 if the dump omits it (the OpenFlow default)
	Cookie   uint64
	Packets  uint64
	Bytes    uint64
	Match    string // e.g. "in_port=1,dl_dst=02:00:00:00:00:01" ("" = match all)
	Actions  string // e.g. "output:2"
}

// DumpFlows reads the bridge's flow tables.
func DumpFlows(ctx context.Context, mgmt string) ([]Flow, error) {
	out, err := ofctl(ctx, "dump-flows", mgmt)
	if err != nil {
		return nil, err
	}
	return parseFlows(out)
}

func parseFlows(out string) ([]Flow, error) {
	var flows []Flow
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "OFPST_") || strings.HasPrefix(line, "NXST_") {
			continue
		}
		before, actions, ok := strings.Cut(line, " actions=")
		if !ok {
			return nil, fmt.Errorf("ovs: unparsable flow %q", line)
		}
		f := Flow{Priority: 32768, Actions: actions}
		var match []string
		// Stats fields end with ", ", flags (reset_counts) with " ", match
		// fields with ",".
		for _, field := range strings.FieldsFunc(before, func(r rune) bool { return r == ',' || r == ' ' }) {
			k, v, _ := strings.Cut(field, "=")
			var err error
			switch k {
			case "cookie":
				f.Cookie, err = strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
			case "table":
				f.Table, err = strconv.Atoi(v)
			case "n_packets":
				f.Packets, err = strconv.ParseUint(v, 10, 64)
			case "n_bytes":
				f.Bytes, err = strconv.ParseUint(v, 10, 64)
			case "priority":
				f.Priority, err = strconv.Atoi(v)
			case "duration", "idle_age", "hard_age", "idle_timeout", "hard_timeout", "reset_counts", "send_flow_rem", "no_packet_counts", "no_byte_counts":
			default:
				match = append(match, field)
			}
			if err != nil {
				return nil, fmt.Errorf("ovs: flow %q: %s: %w", line, k, err)
			}
		}
		f.Match = strings.Join(match, ",")
		flows = append(flows, f)
	}
	return flows, sc.Err()
}

// PortStat is one port's OpenFlow counters.
type PortStat struct {
	Port                        string // OpenFlow port number, or "LOCAL"
	RxPackets, RxBytes, RxDrops uint64
	RxErrors                    uint64
	TxPackets, TxBytes, TxDrops uint64
	TxErrors                    uint64
}

var (
	portLineRe = regexp.MustCompile(`^port\s+"?([^:"]+)"?:\s+rx\s+(.*)$`)
	kvRe       = regexp.MustCompile(`(\w+)=(\d+|\?)`)
)

// PortStats reads the bridge's per-port counters (dump-ports).
func PortStats(ctx context.Context, mgmt string) ([]PortStat, error) {
	out, err := ofctl(ctx, "dump-ports", mgmt)
	if err != nil {
		return nil, err
	}
	return parsePortStats(out)
}

func parsePortStats(out string) ([]PortStat, error) {
	var stats []PortStat
	var cur *PortStat
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if m := portLineRe.FindStringSubmatch(line); m != nil {
			stats = append(stats, PortStat{Port: strings.TrimSpace(m[1])})
			cur = &stats[len(stats)-1]
			fillCounters(m[2], &cur.RxPackets, &cur.RxBytes, &cur.RxDrops, &cur.RxErrors)
			continue
		}
		if rest, ok := strings.CutPrefix(line, "tx "); ok && cur != nil {
			fillCounters(rest, &cur.TxPackets, &cur.TxBytes, &cur.TxDrops, &cur.TxErrors)
		}
	}
	return stats, nil
}

func fillCounters(s string, pkts, bytes, drops, errs *uint64) {
	for _, m := range kvRe.FindAllStringSubmatch(s, -1) {
		if m[2] == "?" {
			continue
		}
		v, _ := strconv.ParseUint(m[2], 10, 64)
		switch m[1] {
		case "pkts":
			*pkts = v
		case "bytes":
			*bytes = v
		case "drop":
			*drops = v
		case "errs":
			*errs = v
		}
	}
}
