package openflow

import (
	"context"
	"fmt"
)

// PortStat is one port's counters (ofp_port_stats).
type PortStat struct {
	Port                                   uint32 // OpenFlow port number; PortLocal is the bridge's own
	RxPackets, TxPackets, RxBytes, TxBytes uint64
	RxDrops, TxDrops, RxErrors, TxErrors   uint64
}

// PortLocal is OFPP_LOCAL, the bridge's internal port.
const PortLocal = 0xfffffffe

const (
	multipartPortStats = 4   // OFPMP_PORT_STATS
	portStatsLen       = 112 // one ofp_port_stats
)

// PortStats reads every port's counters (OFPMP_PORT_STATS).
func (o *Conn) PortStats(ctx context.Context) ([]PortStat, error) {
	req := Header(TypeMultipartReq, 8+8+8, o.NextXID())
	be.PutUint16(req[8:], multipartPortStats)
	be.PutUint32(req[16:], PortAny)
	p := o.Expect(be.Uint32(req[4:]))
	if err := o.Write(req); err != nil {
		o.Forget(p)
		return nil, err
	}
	return awaitMultipart(ctx, o, p, multipartPortStats, "port stats", parsePortStats)
}

// awaitMultipart waits for a multipart reply of type typ and parses every
// part's body with parse, appending.
func awaitMultipart[T any](ctx context.Context, o *Conn, p *Pending, typ uint16, what string, parse func([]T, []byte) ([]T, error)) ([]T, error) {
	parts, err := o.Await(ctx, p, statsTimeout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var out []T
	for _, b := range parts {
		if len(b) < 8 || be.Uint16(b) != typ {
			return nil, fmt.Errorf("%s: reply of %d bytes is not multipart type %d", what, len(b), typ)
		}
		if out, err = parse(out, b[8:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parsePortStats(out []PortStat, b []byte) ([]PortStat, error) {
	if len(b)%portStatsLen != 0 {
		return nil, fmt.Errorf("port stats: %d bytes is not a whole number of entries", len(b))
	}
	for ; len(b) > 0; b = b[portStatsLen:] {
		u := func(i int) uint64 { return be.Uint64(b[8+8*i:]) }
		out = append(out, PortStat{Port: be.Uint32(b), RxPackets: u(0), TxPackets: u(1), RxBytes: u(2), TxBytes: u(3),
			RxDrops: u(4), TxDrops: u(5), RxErrors: u(6), TxErrors: u(7)})
	}
	return out, nil
}

// InPort returns the in_port the flow matches, if it matches one.
func (f *Flow) InPort() (uint32, bool) {
	var port uint32
	found := false
	eachOXM(f.Match, func(h uint32, _, v []byte) {
		if h == OXMInPort && len(v) == 4 {
			port, found = be.Uint32(v), true
		}
	})
	return port, found
}
