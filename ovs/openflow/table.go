package openflow

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/internal/fanout"
)

// Flow is one flow entry as the switch reports it (ofp_flow_stats), its
// match and instructions as the switch encodes them.
type Flow struct {
	Table        uint8
	Priority     uint16
	Cookie       uint64
	Packets      uint64
	Bytes        uint64
	Match        []byte // the OXM fields, without ofp_match's header and padding
	Instructions []byte
}

// key identifies a flow in its table: OpenFlow's table, priority and
// match, the match's fields in a canonical order (a switch may list them
// in its own).
//
// Made without fmt or a string per field: InstallAll keys every rule and
// every flow read back (50k keys on DF(4,8,4)), concurrently with the
// switches that take them, on the same two cores.
func key(table uint8, priority uint16, match []byte) string {
	var buf [8][]byte
	fields := buf[:0]
	b := make([]byte, 0, 4+len(match))
	b = append(b, table, byte(priority>>8), byte(priority))
	if err := eachOXM(match, func(_ uint32, f, _ []byte) { fields = append(fields, f) }); err != nil {
		// Unparsed: the raw bytes, marked so that no parsed match equals it.
		return string(append(append(b, 1), match...))
	}
	slices.SortFunc(fields, bytes.Compare)
	b = append(b, 0)
	for _, f := range fields {
		b = append(b, f...)
	}
	return string(b)
}

// statsTimeout bounds one flow-stats request: Open vSwitch answers a
// table of thousands of flows in milliseconds.
const statsTimeout = 30 * time.Second

// Flows reads every flow of every table (OFPMP_FLOW).
func (o *Conn) Flows(ctx context.Context) ([]Flow, error) {
	req, p := o.flowsRequest()
	if err := o.Write(req); err != nil {
		o.Forget(p)
		return nil, err
	}
	return o.awaitFlows(ctx, p)
}

// flowsRequest is a flow-stats request for every flow, and its Pending.
func (o *Conn) flowsRequest() ([]byte, *Pending) {
	req := Header(TypeMultipartReq, 8+8+32+8, o.NextXID())
	be.PutUint16(req[8:], multipartFlow)
	r := req[16:]
	r[0] = TableAll
	be.PutUint32(r[4:], PortAny)
	be.PutUint32(r[8:], GroupAny)
	// cookie and cookie mask 0: every flow; then an empty OXM match
	be.PutUint16(r[32:], matchOXM)
	be.PutUint16(r[34:], 4)
	return req, o.Expect(be.Uint32(req[4:]))
}

func (o *Conn) awaitFlows(ctx context.Context, p *Pending) ([]Flow, error) {
	return awaitMultipart(ctx, o, p, multipartFlow, "flow stats", parseFlowStats)
}

// parseFlowStats appends the ofp_flow_stats entries of one reply body.
func parseFlowStats(flows []Flow, b []byte) ([]Flow, error) {
	const fixed = 48
	for len(b) > 0 {
		if len(b) < fixed+8 {
			return nil, fmt.Errorf("flow stats: entry of %d bytes", len(b))
		}
		n := int(be.Uint16(b))
		if n < fixed+8 || n > len(b) {
			return nil, fmt.Errorf("flow stats: entry of %d bytes in %d", n, len(b))
		}
		e := b[:n]
		f := Flow{Table: e[2], Priority: be.Uint16(e[12:]), Cookie: be.Uint64(e[24:]),
			Packets: be.Uint64(e[32:]), Bytes: be.Uint64(e[40:])}
		m := e[fixed:]
		if be.Uint16(m) != matchOXM {
			return nil, fmt.Errorf("flow stats: match type %d, want OXM", be.Uint16(m))
		}
		mlen := int(be.Uint16(m[2:]))
		if mlen < 4 || pad8(mlen) > len(m) {
			return nil, fmt.Errorf("flow stats: match of %d bytes in %d", mlen, len(m))
		}
		f.Match = m[4:mlen]
		f.Instructions = m[pad8(mlen):]
		flows = append(flows, f)
		b = b[n:]
	}
	return flows, nil
}

// Bundles for OpenFlow 1.3: Open vSwitch's ONF extension 230, the
// OpenFlow 1.4 bundle messages carried as experimenter messages.
const (
	onfExperimenter   = 0x4f4e4600
	onfBundleControl  = 2300
	onfBundleAdd      = 2301
	bundleOpen        = 0
	bundleCommit      = 4
	bundleDiscard     = 6
	bundleAtomic      = 1
	bundleOrdered     = 2
	bundleFlags       = bundleAtomic | bundleOrdered
	experimenterFixed = 16 // header, experimenter, exp_type
)

func bundleControl(xid, id uint32, typ uint16) []byte {
	b := Header(TypeExperimenter, experimenterFixed+8, xid)
	be.PutUint32(b[8:], onfExperimenter)
	be.PutUint32(b[12:], onfBundleControl)
	be.PutUint32(b[16:], id)
	be.PutUint16(b[20:], typ)
	be.PutUint16(b[22:], bundleFlags)
	return b
}

// appendBundled appends msg wrapped in a bundle add message, the inner
// message carrying the outer one's xid.
func appendBundled(b []byte, id uint32, msg []byte) []byte {
	xid := be.Uint32(msg[4:])
	n := experimenterFixed + 8 + len(msg)
	start := len(b)
	b = append(b, make([]byte, experimenterFixed+8)...)
	putHeader(b[start:], TypeExperimenter, n, xid)
	be.PutUint32(b[start+8:], onfExperimenter)
	be.PutUint32(b[start+12:], onfBundleAdd)
	be.PutUint32(b[start+16:], id)
	be.PutUint16(b[start+22:], bundleFlags)
	return append(b, msg...)
}

// installTimeout bounds one bridge's bundle: Open vSwitch takes a table
// of thousands of flows in well under a second.
const installTimeout = time.Minute

// Replace makes the bridge's flow tables exactly rules, atomically: one
// bundle that adds every rule and deletes every other flow, as
// `ovs-ofctl --bundle replace-flows` does. A flow that stays keeps its
// counters (an add of an existing match replaces its actions only).
func (o *Conn) Replace(ctx context.Context, rules []controller.Rule) error {
	enc, err := encode(rules)
	if err != nil {
		return err
	}
	_, err = o.replace(ctx, rules, enc, false)
	return err
}

// Install is Replace, then Verify, the read-back requested with the
// commit: Open vSwitch answers a connection's messages in order, so the
// flows it reports are the committed table.
func (o *Conn) Install(ctx context.Context, rules []controller.Rule, skip func(table uint8) bool) (int, error) {
	enc, err := encode(rules)
	if err != nil {
		return 0, err
	}
	have, err := o.replace(ctx, rules, enc, true)
	if err != nil {
		return 0, err
	}
	return check(rules, enc, have, skip)
}

// Load is Install for a bridge that forwards nothing yet (no port
// attached: `up` attaches them after the rules): one write — a bundle that
// deletes every flow and adds every rule, its commit, and the read-back —
// where Install takes three round trips, each a pass of ovs-vswitchd's
// main loop. A pass costs an instance a failed accept() per bridge
// (allocating and freeing a socket) and a poll over every descriptor: on
// DF(4,8,4)'s 264 bridges those passes, not the rules, were most of the
// daemons' time. What it gives up is the atomicity against a rejected
// rule: Open vSwitch leaves a rejected add out of the bundle and commits
// the rest, which Install's barrier before the commit prevents. On a
// bridge without ports no frame sees that table, and Load returns the
// rejection, naming the rule, for the caller to remove the bridge.
func (o *Conn) Load(ctx context.Context, rules []controller.Rule, skip func(table uint8) bool) (int, error) {
	enc, err := encode(rules)
	if err != nil {
		return 0, err
	}
	id := o.NextXID()
	openP := o.Expect(id)
	// The open, the bundled delete-all, the adds, the commit, the flows
	// request: one allocation.
	size := 3*(experimenterFixed+8) + 2*56
	for i := range enc {
		size += experimenterFixed + 8 + len(enc[i].msg)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, bundleControl(id, id, bundleOpen)...)
	buf = appendBundled(buf, id, deleteAll(o.NextXID()))
	buf, xids := o.appendAdds(buf, id, enc)
	errs := o.Rejected()
	commitXID := o.NextXID()
	commitP := o.Expect(commitXID)
	buf = append(buf, bundleControl(commitXID, id, bundleCommit)...)
	req, after := o.flowsRequest()
	if err := o.Write(append(buf, req...)); err != nil {
		o.Forget(openP)
		o.Forget(commitP)
		o.Forget(after)
		return 0, err
	}
	_, openErr := o.Await(ctx, openP, installTimeout)
	_, commitErr := o.Await(ctx, commitP, installTimeout)
	have, flowsErr := o.awaitFlows(ctx, after)
	switch {
	case openErr != nil:
		return 0, fmt.Errorf("opening a bundle: %w", openErr)
	case o.Rejected() != errs:
		// The adds' errors come before the commit's reply: the switch
		// answers a connection in order.
		return 0, o.rejection(rules, xids)
	case commitErr != nil:
		return 0, fmt.Errorf("committing the bundle: %w", commitErr)
	case flowsErr != nil:
		return 0, flowsErr
	}
	return check(rules, enc, have, skip)
}

// deleteAll is a FlowMod that deletes every flow of every table.
func deleteAll(xid uint32) []byte {
	b := Header(TypeFlowMod, 48+8, xid)
	b[24], b[25] = TableAll, FlowDelete
	be.PutUint32(b[32:], NoBuffer)
	be.PutUint32(b[36:], PortAny)
	be.PutUint32(b[40:], GroupAny)
	be.PutUint16(b[48:], matchOXM)
	be.PutUint16(b[50:], 4)
	return b
}

// flowMod is one rule encoded: its FlowMod (xid 0 until sent) and the
// key (key) of the flow entry it makes.
type flowMod struct {
	msg []byte
	key string
}

// encode encodes every rule as an add, and refuses two rules the switch
// would keep as one (the same table, priority and match).
func encode(rules []controller.Rule) ([]flowMod, error) {
	out := make([]flowMod, len(rules))
	first := make(map[string]int, len(rules))
	for i := range rules {
		r := &rules[i]
		msg, err := AppendFlowMod(nil, 0, FlowAdd, r)
		if err != nil {
			return nil, fmt.Errorf("rule %d (%s): %w", i, r.OpenFlow(), err)
		}
		k := key(r.Table, r.Priority, oxmOf(msg))
		if j, dup := first[k]; dup {
			return nil, fmt.Errorf("rules %d and %d have the same table, priority and match: the switch keeps one (%s)", j, i, r.OpenFlow())
		}
		first[k] = i
		out[i] = flowMod{msg, k}
	}
	return out, nil
}

// instructions returns a FlowMod's instructions, as the flow entry it
// makes lists them.
func instructions(flowMod []byte) []byte {
	m := flowMod[48:]
	return m[pad8(int(be.Uint16(m[2:]))):]
}

// replace runs Replace in three round trips to the switch, each message
// sent without waiting for the one before (a round trip is one pass of
// ovs-vswitchd's main loop, 1.2 ms with 33 bridges on an instance): the
// table's flows and the bundle's opening; every add and delete and a
// barrier, after which every rejection has been reported; the commit,
// and with readBack the flows after it.
func (o *Conn) replace(ctx context.Context, rules []controller.Rule, enc []flowMod, readBack bool) ([]Flow, error) {
	id := o.NextXID()
	req, flowsP := o.flowsRequest()
	openP := o.Expect(id)
	if err := o.Write(append(req, bundleControl(id, id, bundleOpen)...)); err != nil {
		o.Forget(flowsP)
		o.Forget(openP)
		return nil, err
	}
	have, err := o.awaitFlows(ctx, flowsP)
	if _, err2 := o.Await(ctx, openP, installTimeout); err2 != nil {
		return nil, fmt.Errorf("opening a bundle: %w", err2)
	}
	if err != nil {
		return nil, o.discard(id, err)
	}
	want := make(map[string]bool, len(enc))
	for i := range enc {
		want[enc[i].key] = true
	}
	buf, xids := o.appendAdds(nil, id, enc)
	for _, f := range have {
		if !want[key(f.Table, f.Priority, f.Match)] {
			buf = appendBundled(buf, id, deleteStrict(o.NextXID(), &f))
		}
	}
	errs := o.Rejected()
	barrier, barrierP := o.BarrierMsg()
	if err := o.Write(append(buf, barrier...)); err != nil {
		o.Forget(barrierP)
		return nil, err
	}
	if _, err := o.Await(ctx, barrierP, installTimeout); err != nil {
		return nil, err
	}
	if o.Rejected() != errs {
		return nil, o.discard(id, o.rejection(rules, xids))
	}
	commitXID := o.NextXID()
	commit := bundleControl(commitXID, id, bundleCommit)
	commitP := o.Expect(commitXID)
	var after *Pending
	if readBack {
		req, after = o.flowsRequest()
		commit = append(commit, req...)
	}
	if err := o.Write(commit); err != nil {
		o.Forget(commitP)
		if after != nil {
			o.Forget(after)
		}
		return nil, err
	}
	if _, err := o.Await(ctx, commitP, installTimeout); err != nil {
		return nil, fmt.Errorf("committing the bundle: %w", err)
	}
	if after == nil {
		return nil, nil
	}
	return o.awaitFlows(ctx, after)
}

// appendAdds appends every rule's FlowMod to bundle id, each under a
// fresh xid, and returns the xids by rule (what names a rejected one).
func (o *Conn) appendAdds(buf []byte, id uint32, enc []flowMod) ([]byte, []uint32) {
	xids := make([]uint32, len(enc))
	for i := range enc {
		xids[i] = o.NextXID()
		be.PutUint32(enc[i].msg[4:], xids[i])
		buf = appendBundled(buf, id, enc[i].msg)
	}
	return buf, xids
}

// rejection is the switch's latest error, naming the rule whose FlowMod
// (sent with xids[k]) it refused.
func (o *Conn) rejection(rules []controller.Rule, xids []uint32) error {
	e := o.LastError()
	what := "a flow mod"
	if k := slices.Index(xids, e.XID); k >= 0 {
		what = fmt.Sprintf("rule %d (%s)", k, rules[k].OpenFlow())
	}
	return fmt.Errorf("the switch rejected %s: %w", what, e)
}

// discard drops an open bundle (a switch drops it anyway when the
// connection closes); bounded on its own, whatever ended the caller's ctx.
func (o *Conn) discard(id uint32, err error) error {
	o.Request(context.Background(), bundleControl(o.NextXID(), id, bundleDiscard), dialTimeout)
	return err
}

// oxmOf returns the OXM fields of a FlowMod's match.
func oxmOf(flowMod []byte) []byte {
	m := flowMod[48:]
	return m[4:be.Uint16(m[2:])]
}

// deleteStrict is a FlowMod that deletes exactly flow f.
func deleteStrict(xid uint32, f *Flow) []byte {
	mlen := 4 + len(f.Match)
	b := Header(TypeFlowMod, 48+pad8(mlen), xid)
	b[24], b[25] = f.Table, FlowDeleteStrict
	be.PutUint16(b[30:], f.Priority)
	be.PutUint32(b[32:], NoBuffer)
	be.PutUint32(b[36:], PortAny)
	be.PutUint32(b[40:], GroupAny)
	be.PutUint16(b[48:], matchOXM)
	be.PutUint16(b[50:], uint16(mlen))
	copy(b[52:], f.Match)
	return b
}

// Verify reads the bridge's flows back and compares them with rules:
// every rule present with its cookie and instructions, no other flow
// (flows in a table skip says, e.g. a learning bridge's learned entries,
// are not compared). It returns the number of flows compared.
func (o *Conn) Verify(ctx context.Context, rules []controller.Rule, skip func(table uint8) bool) (int, error) {
	enc, err := encode(rules)
	if err != nil {
		return 0, err
	}
	have, err := o.Flows(ctx)
	if err != nil {
		return 0, err
	}
	return check(rules, enc, have, skip)
}

// check is Verify on flows read.
func check(rules []controller.Rule, enc []flowMod, have []Flow, skip func(table uint8) bool) (int, error) {
	wants := make(map[string]int, len(enc)) // rule by key
	for i := range enc {
		wants[enc[i].key] = i
	}
	n := 0
	var problems []string
	seen := make(map[string]bool, len(rules))
	for _, f := range have {
		if skip != nil && skip(f.Table) {
			continue
		}
		n++
		k := key(f.Table, f.Priority, f.Match)
		i, ok := wants[k]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("a flow the controller did not compile (table %d, priority %d, cookie %#x)", f.Table, f.Priority, f.Cookie))
		case f.Cookie != rules[i].Kind.Cookie() || !bytes.Equal(f.Instructions, instructions(enc[i].msg)):
			problems = append(problems, fmt.Sprintf("rule %d (%s) installed as cookie %#x, instructions %x", i, rules[i].OpenFlow(), f.Cookie, f.Instructions))
		}
		seen[k] = true
	}
	for k, i := range wants {
		if !seen[k] {
			problems = append(problems, fmt.Sprintf("rule %d (%s) missing", i, rules[i].OpenFlow()))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		more := ""
		if len(problems) > 3 {
			more = fmt.Sprintf(" (and %d more)", len(problems)-3)
			problems = problems[:3]
		}
		return n, fmt.Errorf("%d flows read back, %d compiled: %s%s", n, len(rules), strings.Join(problems, "; "), more)
	}
	return n, nil
}

// Job is one bridge's table for InstallAll.
type Job struct {
	Bridge string // for errors
	Mgmt   string // its management socket, unix:PATH
	Rules  []controller.Rule
	// Skip, when set, names tables the read-back leaves alone (a learning
	// bridge's learned entries).
	Skip func(table uint8) bool
	// Fresh says the bridge has no port yet: its table goes in by Load.
	Fresh bool
}

// InstallAll replaces every job's bridge table with its rules and reads
// it back (Install, or Load for a fresh bridge), each over one
// connection, at most parallel bridges at a time. It returns each
// bridge's flow count as read back.
//
// A wave of up to parallel bridges connects, then installs, then closes,
// each phase for all of them at once rather than each bridge on its own:
// an ovs-vswitchd main-loop pass serves every connection with work
// waiting, and costs the instance a failed accept() per bridge, so phases
// that bring all of an instance's bridges their work at once make few
// passes. (On DF(4,8,4)'s 264 bridges, the failed accepts were a
// third of the daemons' time when each bridge went its own way.)
func InstallAll(ctx context.Context, jobs []Job, parallel int) ([]int, error) {
	counts := make([]int, len(jobs))
	for start := 0; start < len(jobs); start += parallel {
		wave := jobs[start:min(len(jobs), start+parallel)]
		conns := make([]*Conn, len(wave))
		err := fanout.Each(len(wave), len(wave), func(i int) (err error) {
			if conns[i], err = Dial(wave[i].Mgmt); err != nil {
				return fmt.Errorf("%s: %w", wave[i].Bridge, err)
			}
			return nil
		})
		if err == nil {
			err = fanout.Each(len(wave), len(wave), func(i int) (err error) {
				j, c := &wave[i], conns[i]
				install := c.Install
				if j.Fresh {
					install = c.Load
				}
				if counts[start+i], err = install(ctx, j.Rules, j.Skip); err != nil {
					return fmt.Errorf("%s: %w", j.Bridge, err)
				}
				return nil
			})
		}
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		if err != nil {
			return counts, err
		}
	}
	return counts, nil
}

// FlowCount connects to a bridge's management socket (unix:PATH) and
// returns how many flows its tables hold.
func FlowCount(ctx context.Context, mgmt string) (int, error) {
	c, err := Dial(mgmt)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	flows, err := c.Flows(ctx)
	return len(flows), err
}
