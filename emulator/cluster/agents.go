package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/hostagent"
	"github.com/ethfab/ethfab/internal/steps"
)

// agentsRequest opens a worker's host agents: every host of the lab in
// order (each agent's peer index is its host's place), the options every
// agent runs with, and how long and until what.
type agentsRequest struct {
	Hosts   []string          `json:"hosts"`
	Options hostagent.Options `json:"options"`
	Limit   time.Duration     `json:"limit_ns"`
	Until   bool              `json:"until"`
}

// agentsGo starts them, at one wall-clock instant on every machine.
type agentsGo struct {
	Start int64 `json:"start_unix_ns"`
}

// agentsAnswer is a worker's line: ready (sockets open), complete (every
// agent of its machine is, and goes on answering its peers), then its
// agents' results by host index, or the error that ended it.
type agentsAnswer struct {
	Ready    bool                      `json:"ready,omitempty"`
	Complete bool                      `json:"complete,omitempty"`
	Results  map[int]*hostagent.Result `json:"results,omitempty"`
	Error    string                    `json:"error,omitempty"`
}

// agentsLead is how far ahead the agents start once every machine's
// sockets are open.
const agentsLead = 200 * time.Millisecond

// Agents runs one host agent per host of a lab across machines, each on
// its host's machine (`worker agents`), all started together, and returns
// their results in the lab's host order (nil: an agent that never
// reported). Every agent's peer index is its host's place in the lab.
func Agents(ctx context.Context, l *fabric.Lab, o hostagent.Options, limit time.Duration, until bool, rep steps.Reporter) ([]*hostagent.Result, error) {
	req := agentsRequest{Options: o, Limit: limit, Until: until}
	for _, h := range l.Hosts {
		req.Hosts = append(req.Hosts, h.Name)
	}
	ss, err := startAll(ctx, l, rep, "agents", req)
	if err != nil {
		return nil, err
	}
	defer endAll(ss)
	read := func(_ int, s *session) (agentsAnswer, error) {
		a, err := answer[agentsAnswer](s)
		if err == nil && a.Error != "" {
			err = errors.New(a.Error)
		}
		return a, err
	}
	if _, err := eachSession(ss, read); err != nil {
		return nil, fmt.Errorf("opening the host agents: %w", err)
	}
	g := agentsGo{Start: time.Now().Add(agentsLead).UnixNano()}
	for _, s := range ss {
		if err := s.send(g); err != nil {
			return nil, err
		}
	}
	// Until every machine's agents are complete, every machine's go on
	// answering their peers (an agent that stopped would leave the other
	// machines' connects to it unanswered); then all stop together.
	var mu sync.Mutex
	complete := 0
	stop := func() {
		for _, s := range ss {
			s.line("stop") // a worker already done has nothing to stop
		}
	}
	as, err := eachSession(ss, func(k int, s *session) (agentsAnswer, error) {
		for {
			a, err := read(k, s)
			if err != nil || !a.Complete {
				return a, err
			}
			mu.Lock()
			if complete++; complete == len(ss) && until {
				stop()
			}
			mu.Unlock()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("host agents: %w", err)
	}
	res := make([]*hostagent.Result, len(l.Hosts))
	for _, a := range as {
		for i, r := range a.Results {
			if i < 0 || i >= len(res) || res[i] != nil {
				return nil, fmt.Errorf("host agents: host %d reported by no machine or by two", i)
			}
			res[i] = r
		}
	}
	return res, nil
}

// WorkerAgents is `ethfab worker agents PART`, one machine's side of
// Agents: its hosts' agents opened, started at the coordinator's instant,
// their results answered.
func WorkerAgents(ctx context.Context, part string, in io.Reader, out io.Writer) error {
	l, r, req, err := openPart[agentsRequest](part, in)
	if err != nil {
		return err
	}
	var eps []hostagent.Endpoint
	var index []int // each endpoint's host index in the lab
	for i, name := range req.Hosts {
		if h := l.Host(name); h != nil {
			eps = append(eps, hostagent.Endpoint{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface})
			index = append(index, i)
		}
	}
	enc := newAnswers(out) // from two goroutines: newAnswers serializes
	fleet, err := hostagent.OpenFleet(eps, req.Options, func(k int, o *hostagent.Options) {
		o.Name = eps[k].Name
		o.PeerIndex = uint16(index[k])
	})
	if err != nil {
		enc(agentsAnswer{Error: fmt.Sprintf("host agents: %v", err)})
		return err
	}
	defer fleet.Close()
	if err := enc(agentsAnswer{Ready: true}); err != nil {
		return err
	}
	var g agentsGo
	if err := readRequest(r, &g); err != nil {
		return err
	}
	select {
	case <-time.After(time.Until(time.Unix(0, g.Start))):
	case <-ctx.Done():
		return ctx.Err()
	}
	fctx, cancel := context.WithTimeout(ctx, req.Limit)
	defer cancel()
	// The coordinator says when to stop (every machine's agents
	// complete), or its input ends; this machine's completion it hears.
	go func() {
		r.ReadBytes('\n')
		cancel()
	}()
	go func() {
		select {
		case <-fleet.Completed():
			enc(agentsAnswer{Complete: true})
		case <-fctx.Done():
		}
	}()
	res, err := fleet.Run(fctx, false)
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		enc(agentsAnswer{Error: fmt.Sprintf("host agents: %v", err)})
		return err
	}
	a := agentsAnswer{Results: map[int]*hostagent.Result{}}
	for k, x := range res {
		a.Results[index[k]] = x
	}
	return enc(a)
}
