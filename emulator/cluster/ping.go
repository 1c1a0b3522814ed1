package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/steps"
)

// pingRequest opens a worker's ping: every host of the lab in order (the
// worker finds its own among them) and the pairs to probe.
type pingRequest struct {
	Hosts  []fabric.PingHost `json:"hosts"`
	Sample int               `json:"sample,omitempty"`
	Seed   int64             `json:"seed"`
}

// pingAnswer is a worker's line: ready (sockets open), sent (its probes
// done), then the pairs ending at its hosts that never arrived.
type pingAnswer struct {
	Ready   bool     `json:"ready,omitempty"`
	Sent    *int     `json:"sent,omitempty"`
	Judged  *int     `json:"judged,omitempty"`
	Missing [][2]int `json:"missing,omitempty"`
}

// Ping probes every ordered host pair (or sample random ones) of a lab
// across machines: every machine's worker opens its hosts' sockets; once
// all are ready each probes from its hosts (replies tell it what its
// probes to other machines' hosts did); once all are done each says which
// pairs ending at its hosts never arrived. A pair is judged only where
// its probe arrives, so a lost reply does not make it unreachable.
func Ping(ctx context.Context, l *fabric.Lab, sample int, seed int64, rep steps.Reporter) (*fabric.PingReport, error) {
	start := time.Now()
	req := pingRequest{Sample: sample, Seed: seed}
	for _, h := range l.Hosts {
		req.Hosts = append(req.Hosts, fabric.PingHost{Name: h.Name, PseudoMAC: h.PseudoMAC})
	}
	ss, err := startAll(ctx, l, rep, "ping", req)
	if err != nil {
		return nil, err
	}
	defer endAll(ss)
	// Every phase waits for every machine: no probe leaves before every
	// host listens, and no machine judges before every probe is out.
	phase := func(what, say string, done func(pingAnswer) bool) ([]pingAnswer, error) {
		as, err := eachSession(ss, func(_ int, s *session) (pingAnswer, error) {
			if say != "" {
				if err := s.line(say); err != nil {
					return pingAnswer{}, err
				}
			}
			for {
				a, err := answer[pingAnswer](s)
				if err != nil || done(a) {
					return a, err
				}
			}
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return as, nil
	}
	if _, err := phase("opening sockets", "", func(p pingAnswer) bool { return p.Ready }); err != nil {
		return nil, err
	}
	if _, err := phase("probing", "go", func(p pingAnswer) bool { return p.Sent != nil }); err != nil {
		return nil, err
	}
	a, err := phase("judging", "report", func(p pingAnswer) bool { return p.Judged != nil })
	if err != nil {
		return nil, err
	}
	r := &fabric.PingReport{Pairs: fabric.PingPairs(len(l.Hosts), sample), Unreachable: []fabric.Unreachable{}}
	judged := 0
	for _, p := range a {
		judged += *p.Judged
		for _, q := range p.Missing {
			if q[0] < 0 || q[0] >= len(l.Hosts) || q[1] < 0 || q[1] >= len(l.Hosts) {
				return nil, fmt.Errorf("a worker named pair %v of %d hosts", q, len(l.Hosts))
			}
			r.Unreachable = append(r.Unreachable, fabric.Unreachable{Src: l.Hosts[q[0]].Name, Dst: l.Hosts[q[1]].Name})
		}
	}
	if judged != r.Pairs {
		return nil, fmt.Errorf("the machines judged %d pairs of %d: a host is on no machine or on two", judged, r.Pairs)
	}
	r.Reached = r.Pairs - len(r.Unreachable)
	r.Seconds = time.Since(start).Seconds()
	return r, ctx.Err()
}

// WorkerPing is `ethfab worker ping PART`, one machine's side of Ping:
// the request line, then "go" and "report" lines from the coordinator,
// each answered on out; the end of its input ends it.
func WorkerPing(ctx context.Context, part string, in io.Reader, out io.Writer) error {
	l, r, req, err := openPart[pingRequest](part, in)
	if err != nil {
		return err
	}
	for i := range req.Hosts {
		if h := l.Host(req.Hosts[i].Name); h != nil {
			req.Hosts[i].NetNS = h.NetNS
		}
	}
	pp, err := fabric.OpenPartPing(l.Lab, req.Hosts, l.Assign, req.Sample, req.Seed)
	if err != nil {
		return err
	}
	defer pp.Close()
	enc := json.NewEncoder(out)
	if err := enc.Encode(pingAnswer{Ready: true}); err != nil {
		return err
	}
	for {
		b, err := r.ReadBytes('\n')
		if err != nil {
			return nil // the coordinator is done, or gone
		}
		switch string(bytes.TrimSpace(b)) {
		case "go":
			n := pp.Send(ctx)
			if err := enc.Encode(pingAnswer{Sent: &n}); err != nil {
				return err
			}
		case "report":
			missing, judged := pp.Missing()
			if err := enc.Encode(pingAnswer{Judged: &judged, Missing: missing}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown request %.40q", b)
		}
	}
}
