package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ss := make([]*session, len(l.Machines))
	defer func() {
		for _, s := range ss {
			if s != nil {
				s.close()
			}
		}
	}()
	for k, m := range l.Machines {
		s, err := openSession(ctx, m, steps.Or(rep), "worker", "ping", m.Part)
		if err != nil {
			return nil, err
		}
		ss[k] = s
		if err := s.send(req); err != nil {
			return nil, err
		}
	}
	// Every phase waits for every machine: no probe leaves before every
	// host listens, and no machine judges before every probe is out.
	each := func(what string, fn func(s *session) error) error {
		errs := make([]error, len(ss))
		var wg sync.WaitGroup
		for k, s := range ss {
			wg.Go(func() {
				if err := fn(s); err != nil {
					errs[k] = fmt.Errorf("machine %s: %s: %w", s.m.Name, what, err)
					cancel()
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	var a = make([]pingAnswer, len(ss))
	if err := each("opening sockets", func(s *session) error { return s.await(func(p pingAnswer) bool { return p.Ready }, nil) }); err != nil {
		return nil, err
	}
	if err := each("probing", func(s *session) error {
		if err := s.line("go"); err != nil {
			return err
		}
		return s.await(func(p pingAnswer) bool { return p.Sent != nil }, nil)
	}); err != nil {
		return nil, err
	}
	if err := each("judging", func(s *session) error {
		if err := s.line("report"); err != nil {
			return err
		}
		k := indexOf(ss, s)
		return s.await(func(p pingAnswer) bool { return p.Judged != nil }, &a[k])
	}); err != nil {
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

func indexOf(ss []*session, s *session) int {
	for k := range ss {
		if ss[k] == s {
			return k
		}
	}
	return -1
}

// session is a worker spoken to in JSON lines, its standard error relayed.
type session struct {
	m    fabric.MachineState
	cmd  interface{ Wait() error }
	in   io.WriteCloser
	out  *bufio.Reader
	last lastLines
	wg   sync.WaitGroup
	done bool
}

func openSession(ctx context.Context, m fabric.MachineState, rep steps.Reporter, args ...string) (*session, error) {
	cmd, err := command(ctx, m, args...)
	if err != nil {
		return nil, err
	}
	s := &session{m: m, cmd: cmd}
	if s.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("machine %s: starting the worker: %w", m.Name, err)
	}
	s.out = bufio.NewReaderSize(stdout, 1<<16)
	s.wg.Go(func() { relay(bufio.NewScanner(stderr), m.Name, rep, &s.last) })
	return s, nil
}

func (s *session) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.line(string(b))
}

func (s *session) line(l string) error {
	if _, err := io.WriteString(s.in, l+"\n"); err != nil {
		return fmt.Errorf("writing to the worker: %w (%s)", err, s.last.String())
	}
	return nil
}

// await reads answers until done says one is the awaited (into *into, if
// not nil).
func (s *session) await(done func(pingAnswer) bool, into *pingAnswer) error {
	for {
		b, err := s.out.ReadBytes('\n')
		if err != nil {
			s.wg.Wait()
			return fmt.Errorf("the worker stopped: %v (%s)", err, s.last.String())
		}
		var a pingAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			return fmt.Errorf("the worker's answer %.80q: %w", b, err)
		}
		if done(a) {
			if into != nil {
				*into = a
			}
			return nil
		}
	}
}

// close ends the session: its input closed (the worker's signal to
// stop), its output drained, the process waited for.
func (s *session) close() error {
	if s.done {
		return nil
	}
	s.done = true
	s.in.Close()
	io.Copy(io.Discard, s.out)
	s.wg.Wait()
	return s.cmd.Wait()
}

// WorkerPing is `ethfab worker ping PART`, one machine's side of Ping:
// the request line, then "go" and "report" lines from the coordinator,
// each answered on out; the end of its input ends it.
func WorkerPing(ctx context.Context, part string, in io.Reader, out io.Writer) error {
	l, err := fabric.Load(part)
	if err != nil {
		return err
	}
	r := bufio.NewReaderSize(in, 1<<16)
	var req pingRequest
	if err := readRequest(r, &req); err != nil {
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
