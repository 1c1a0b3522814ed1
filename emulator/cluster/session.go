package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/steps"
)

// session is one `ethfab worker` on one machine: its input, which stays
// open while it works and whose end is its signal to stop (a cancelled
// context closes it: a worker building its part rolls it back, a ping or
// traffic worker closes its sockets); its answers (JSON lines, or all of
// its output); its standard error relayed as lines named after the
// machine.
type session struct {
	m   fabric.MachineState
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader // answers, for a worker spoken to in lines
	buf bytes.Buffer  // all of its output, otherwise
	log *lineRelay
}

// startSession starts `ethfab ARGS` on machine m; lines: its answers are
// read a line at a time (answer), else kept whole (wait).
func startSession(ctx context.Context, m fabric.MachineState, rep steps.Reporter, lines bool, args ...string) (*session, error) {
	cmd, err := command(ctx, m, args...)
	if err != nil {
		return nil, err
	}
	s := &session{m: m, cmd: cmd, log: &lineRelay{machine: m.Name, rep: steps.Or(rep)}}
	if s.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	// Stopped by its input's end, not a signal: over ssh a signal would
	// end only the local client, and the coordinator would go on while
	// the far worker still rolled back. WaitDelay (command) then bounds
	// the wait, and the copying of its output.
	cmd.Cancel = func() error { return s.in.Close() }
	cmd.WaitDelay = workerGrace
	// Its own process group: a second Ctrl-C at the coordinator's
	// terminal does not reach the workers rolling the lab back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = s.log
	if lines {
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		s.out = bufio.NewReaderSize(stdout, 1<<16)
	} else {
		cmd.Stdout = &s.buf
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("machine %s: starting the worker: %w", m.Name, err)
	}
	return s, nil
}

// startAll starts `ethfab worker SUB PART` on every machine of l, spoken to
// in lines, and sends each the request req. On error, the sessions that
// started are ended.
func startAll(ctx context.Context, l *fabric.Lab, rep steps.Reporter, sub string, req any) ([]*session, error) {
	ss := make([]*session, 0, len(l.Machines))
	for _, m := range l.Machines {
		s, err := startSession(ctx, m, rep, true, "worker", sub, m.Part)
		if err == nil {
			ss = append(ss, s)
			err = s.send(req)
		}
		if err != nil {
			endAll(ss)
			return nil, err
		}
	}
	return ss, nil
}

// endAll ends every session (closing its input: its signal to stop).
func endAll(ss []*session) {
	for _, s := range ss {
		s.wait(true)
	}
}

// send writes v to the worker as a JSON line.
func (s *session) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.line(string(b))
}

func (s *session) line(l string) error {
	if _, err := io.WriteString(s.in, l+"\n"); err != nil {
		return fmt.Errorf("writing to the worker: %w (%s)", err, s.log.last())
	}
	return nil
}

// answer reads the worker's next line into v.
func answer[T any](s *session) (T, error) {
	var v T
	b, err := s.out.ReadBytes('\n')
	if err != nil {
		return v, fmt.Errorf("the worker stopped: %v (%s)", err, s.log.last())
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("the worker's answer %.80q: %w", b, err)
	}
	return v, nil
}

// wait ends the session: its input closed (stop: at once, the worker's
// signal to end; else once it has ended of itself, as a worker building
// its part must), the process waited for (its last lines in the error).
// out is all it wrote, for a session not spoken to in lines.
func (s *session) wait(stop bool) (out []byte, err error) {
	if stop {
		s.in.Close()
	}
	if s.out != nil {
		io.Copy(io.Discard, s.out)
	}
	if err := s.cmd.Wait(); err != nil {
		if l := s.log.last(); l != "" {
			return nil, fmt.Errorf("worker: %w: %s", err, l)
		}
		return nil, fmt.Errorf("worker: %w", err)
	}
	return s.buf.Bytes(), nil
}

// eachSession runs fn on every session at once; an error is its machine's.
func eachSession[T any](ss []*session, fn func(k int, s *session) (T, error)) ([]T, error) {
	out := make([]T, len(ss))
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for k, s := range ss {
		wg.Go(func() {
			v, err := fn(k, s)
			if err != nil {
				errs[k] = fmt.Errorf("machine %s: %w", s.m.Name, err)
			}
			out[k] = v
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// lineRelay is a worker's standard error: each line relayed to the
// reporter, named after the machine, and the last few kept for its error.
type lineRelay struct {
	machine string
	rep     steps.Reporter
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (r *lineRelay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		l := string(r.partial[:i])
		r.partial = r.partial[i+1:]
		steps.Printf(r.rep, "  %s: %s", r.machine, l)
		if r.lines = append(r.lines, l); len(r.lines) > 5 {
			r.lines = r.lines[1:]
		}
	}
	return len(p), nil
}

// last is the worker's last lines of standard error, joined.
func (r *lineRelay) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ls := r.lines
	if len(r.partial) > 0 {
		ls = append(append([]string(nil), ls...), string(r.partial))
	}
	return strings.Join(ls, "; ")
}

// newAnswers is a worker's side of a session: each answer a JSON line on
// out.
func newAnswers(out io.Writer) func(v any) error {
	enc := json.NewEncoder(out)
	var mu sync.Mutex // one line at a time, from any goroutine
	return func(v any) error {
		mu.Lock()
		defer mu.Unlock()
		return enc.Encode(v)
	}
}
