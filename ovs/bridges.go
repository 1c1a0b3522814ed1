package ovs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/ovn-kubernetes/libovsdb/model"
	"github.com/ovn-kubernetes/libovsdb/ovsdb"

	"github.com/ethfab/ethfab/ovs/vswitchd"
)

// Port is a switch port: an existing network device (a veth end) in the
// instance's netns, attached with a requested OpenFlow port number.
type Port struct {
	Name   string
	OFPort int // ofport_request; 0 lets OVS choose
}

// Bridge is one emulated switch.
type Bridge struct {
	Name        string
	Ports       []Port
	ExternalIDs map[string]string
	// DatapathID is the OpenFlow datapath id; 0 derives a stable one from
	// the lab and bridge name.
	DatapathID uint64
}

// PortInfo is a port as vswitchd attached it.
type PortInfo struct {
	Name   string
	OFPort int    // assigned OpenFlow port; -1 if the interface failed
	Error  string // Interface.error, "" if none
}

// BridgeInfo is a bridge as the database holds it.
type BridgeInfo struct {
	Name        string
	DatapathID  string
	Ports       []PortInfo // sorted by name
	ExternalIDs map[string]string
}

// CreateOptions tune how CreateBridgesWith splits the work; the zero value
// is what CreateBridges does.
type CreateOptions struct {
	// BridgesPerTxn bounds the bridges (with their ports) per transaction;
	// 0 = all in one.
	BridgesPerTxn int
	// PortsLater creates all bridges empty first, then adds the ports.
	PortsLater bool
	// NoWait returns once the database committed, without waiting for
	// ovs-vswitchd to attach the ports.
	NoWait bool
	// WaitTimeout bounds the wait for ports to attach; 0 = 10 minutes
	// (the context may end it sooner).
	WaitTimeout time.Duration
}

// CreateBridges adds the bridges and their ports in one OVSDB transaction
// and waits until ovs-vswitchd has attached every port.
func (i *Instance) CreateBridges(ctx context.Context, bridges []Bridge) error {
	return i.CreateBridgesWith(ctx, bridges, CreateOptions{})
}

// CreateBridgesWith is CreateBridges with options, for benchmarking.
func (i *Instance) CreateBridgesWith(ctx context.Context, bridges []Bridge, opt CreateOptions) error {
	root, err := i.prepare(ctx, bridges)
	if err != nil {
		return err
	}
	chunk := opt.BridgesPerTxn
	if chunk <= 0 {
		chunk = len(bridges)
	}
	for start := 0; start < len(bridges); start += chunk {
		part := bridges[start:min(start+chunk, len(bridges))]
		if opt.PortsLater {
			err = i.createBridgesThenPorts(ctx, root, start, part)
		} else {
			var ops []ovsdb.Operation
			ops, err = i.bridgeOps(root, start, part, true)
			if err == nil {
				err = i.transact(ctx, ops)
			}
		}
		if err != nil {
			return err
		}
	}
	if opt.NoWait {
		return nil
	}
	timeout := opt.WaitTimeout
	if timeout == 0 {
		timeout = portsWait
	}
	return i.WaitPorts(ctx, bridges, timeout)
}

// bridgeOps builds inserts for the bridges (and their ports if withPorts)
// plus the Open_vSwitch.bridges mutation that keeps them from being
// garbage-collected. Named UUIDs are indices (valid identifiers whatever
// the bridge and port names are).
func (i *Instance) bridgeOps(root string, base int, bridges []Bridge, withPorts bool) ([]ovsdb.Operation, error) {
	var ops []ovsdb.Operation
	var brUUIDs []string
	secure := vswitchd.BridgeFailModeSecure
	for bi, b := range bridges {
		var portUUIDs []string
		if withPorts {
			pops, uuids, err := i.portOps(base+bi, b)
			if err != nil {
				return nil, err
			}
			ops = append(ops, pops...)
			portUUIDs = uuids
		}
		dpid := b.DatapathID
		if dpid == 0 {
			dpid = deriveDPID(i.cfg.Lab, b.Name)
		}
		brUUID := fmt.Sprintf("b%d", base+bi)
		br := &vswitchd.Bridge{
			UUID:         brUUID,
			Name:         b.Name,
			DatapathType: i.cfg.Datapath,
			FailMode:     &secure,
			Protocols:    []vswitchd.BridgeProtocols{vswitchd.BridgeProtocolsOpenflow13},
			OtherConfig: map[string]string{
				"disable-in-band": "true",
				"datapath-id":     fmt.Sprintf("%016x", dpid),
			},
			ExternalIDs: i.tags(b.ExternalIDs),
			Ports:       portUUIDs,
		}
		bop, err := i.ovs.Create(br)
		if err != nil {
			return nil, fmt.Errorf("ovs: bridge %s: %w", b.Name, err)
		}
		ops = append(ops, bop...)
		brUUIDs = append(brUUIDs, brUUID)
	}
	rootRow := &vswitchd.OpenvSwitch{UUID: root}
	mop, err := i.ovs.Where(rootRow).Mutate(rootRow, model.Mutation{
		Field: &rootRow.Bridges, Mutator: ovsdb.MutateOperationInsert, Value: brUUIDs,
	})
	if err != nil {
		return nil, fmt.Errorf("ovs: mutate Open_vSwitch.bridges: %w", err)
	}
	return append(ops, mop...), nil
}

// portOps builds Port+Interface inserts for bridge b (index bi).
func (i *Instance) portOps(bi int, b Bridge) ([]ovsdb.Operation, []string, error) {
	var ops []ovsdb.Operation
	var uuids []string
	// Without QoS, vswitchd deletes a root qdisc it did not make on every
	// port it adds; a linux-noop QoS leaves ethfab's tc shaping alone.
	qosUUID := fmt.Sprintf("q%d", bi)
	if len(b.Ports) > 0 {
		qop, err := i.ovs.Create(&vswitchd.QoS{UUID: qosUUID, Type: "linux-noop", ExternalIDs: i.tags(nil)})
		if err != nil {
			return nil, nil, fmt.Errorf("ovs: qos of %s: %w", b.Name, err)
		}
		ops = append(ops, qop...)
	}
	for pi, p := range b.Ports {
		ifUUID := fmt.Sprintf("i%d_%d", bi, pi)
		portUUID := fmt.Sprintf("p%d_%d", bi, pi)
		iface := &vswitchd.Interface{
			UUID:        ifUUID,
			Name:        p.Name,
			Type:        i.cfg.PortType,
			ExternalIDs: i.tags(nil),
		}
		if p.OFPort > 0 {
			req := p.OFPort
			iface.OfportRequest = &req
		}
		port := &vswitchd.Port{
			UUID:        portUUID,
			Name:        p.Name,
			Interfaces:  []string{ifUUID},
			ExternalIDs: i.tags(nil),
			QOS:         &qosUUID,
		}
		iop, err := i.ovs.Create(iface)
		if err != nil {
			return nil, nil, fmt.Errorf("ovs: interface %s: %w", p.Name, err)
		}
		pop, err := i.ovs.Create(port)
		if err != nil {
			return nil, nil, fmt.Errorf("ovs: port %s: %w", p.Name, err)
		}
		ops = append(ops, iop...)
		ops = append(ops, pop...)
		uuids = append(uuids, portUUID)
	}
	return ops, uuids, nil
}

func (i *Instance) createBridgesThenPorts(ctx context.Context, root string, base int, bridges []Bridge) error {
	ops, err := i.bridgeOps(root, base, bridges, false)
	if err != nil {
		return err
	}
	if err := i.transact(ctx, ops); err != nil {
		return err
	}
	return i.addPorts(ctx, base, bridges)
}

// prepare connects to the database, checks that every bridge's socket
// path fits, and returns the root row's UUID.
func (i *Instance) prepare(ctx context.Context, bridges []Bridge) (string, error) {
	if err := i.connect(ctx); err != nil {
		return "", err
	}
	for _, b := range bridges {
		if err := checkSocketPath(strings.TrimPrefix(i.MgmtSocket(b.Name), "unix:")); err != nil {
			return "", err
		}
	}
	return i.waitRootUUID(ctx)
}

// CreateEmptyBridges adds the bridges without their ports, in one OVSDB
// transaction; AddPorts attaches the ports later. A bridge's rules go in
// faster before it has ports: ovs-vswitchd polls every port's socket on
// each pass of its main loop, which tripled the cost of a FlowMod on
// DF(4,8,4)'s 500-port instances.
func (i *Instance) CreateEmptyBridges(ctx context.Context, bridges []Bridge) error {
	root, err := i.prepare(ctx, bridges)
	if err != nil {
		return err
	}
	ops, err := i.bridgeOps(root, 0, bridges, false)
	if err != nil {
		return err
	}
	return i.transactAndWait(ctx, root, ops, CallTimeout)
}

// transactAndWait commits ops and waits until ovs-vswitchd has applied
// them, as `ovs-vsctl --wait` does: the transaction raises next_cfg, and
// the daemon sets cur_cfg to it once it has reconfigured (here: opened
// every new bridge's management socket, attached every new port). It
// writes cur_cfg in the transaction that records what the
// reconfiguration did, each interface's ofport or error among it
// (vswitchd/bridge.c, bridge_run), so once cur_cfg is there, so are they.
// wait bounds the wait for the daemon.
func (i *Instance) transactAndWait(ctx context.Context, root string, ops []ovsdb.Operation, wait time.Duration) error {
	rootRow := &vswitchd.OpenvSwitch{UUID: root}
	mop, err := i.ovs.Where(rootRow).Mutate(rootRow, model.Mutation{
		Field: &rootRow.NextCfg, Mutator: ovsdb.MutateOperationAdd, Value: 1,
	})
	if err != nil {
		return fmt.Errorf("ovs: mutate Open_vSwitch.next_cfg: %w", err)
	}
	ops = append(append(ops, mop...), ovsdb.Operation{Op: ovsdb.OperationSelect, Table: vswitchd.OpenvSwitchTable,
		Where:   []ovsdb.Condition{{Column: "_uuid", Function: ovsdb.ConditionEqual, Value: ovsdb.UUID{GoUUID: root}}},
		Columns: []string{"next_cfg"}})
	res, err := i.transactResults(ctx, ops)
	if err != nil {
		return err
	}
	rows := res[len(res)-1].Rows
	if len(rows) != 1 {
		return fmt.Errorf("ovs: next_cfg: %d rows", len(rows))
	}
	var next int
	switch v := rows[0]["next_cfg"].(type) {
	case float64:
		next = int(v)
	case int:
		next = v
	default:
		return fmt.Errorf("ovs: next_cfg is %T", v)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		if i.cur.cfg.Load() >= int64(next) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ovs: ovs-vswitchd did not apply configuration %d within %v (it is at %d)", next, wait, i.cur.cfg.Load())
		case <-i.cur.changed:
		case <-time.After(100 * time.Millisecond): // another waiter may have taken the wake-up
		}
	}
}

// portsWait bounds the wait for a lab's ports to attach.
const portsWait = 10 * time.Minute

// AddPorts adds the ports of bridges made by CreateEmptyBridges, in one
// transaction, and waits until ovs-vswitchd has attached every one.
func (i *Instance) AddPorts(ctx context.Context, bridges []Bridge) error {
	root, err := i.prepare(ctx, bridges)
	if err != nil {
		return err
	}
	ops, err := i.addPortOps(0, bridges)
	if err != nil {
		return err
	}
	// Attaching is the daemon's work per port: the ports' wait, not a
	// call's, bounds it.
	return i.applyPorts(ctx, root, ops, bridges, portsWait)
}

// addPorts inserts the bridges' ports and adds them to their bridges,
// found by name; base numbers the bridges as bridgeOps did.
func (i *Instance) addPorts(ctx context.Context, base int, bridges []Bridge) error {
	ops, err := i.addPortOps(base, bridges)
	if err != nil {
		return err
	}
	return i.transact(ctx, ops)
}

// addPortOps are addPorts' operations.
func (i *Instance) addPortOps(base int, bridges []Bridge) ([]ovsdb.Operation, error) {
	var ops []ovsdb.Operation
	for bi, b := range bridges {
		pops, uuids, err := i.portOps(base+bi, b)
		if err != nil {
			return nil, err
		}
		ops = append(ops, pops...)
		brRow := &vswitchd.Bridge{Name: b.Name}
		mop, err := i.ovs.Where(brRow).Mutate(brRow, model.Mutation{
			Field: &brRow.Ports, Mutator: ovsdb.MutateOperationInsert, Value: uuids,
		})
		if err != nil {
			return nil, fmt.Errorf("ovs: mutate %s.ports: %w", b.Name, err)
		}
		ops = append(ops, mop...)
	}
	return ops, nil
}

func (i *Instance) tags(extra map[string]string) map[string]string {
	m := make(map[string]string, len(extra)+1)
	for k, v := range extra {
		m[k] = v
	}
	m[LabKey] = i.cfg.Lab
	return m
}

// deriveDPID makes a stable 48-bit datapath id from lab and bridge name.
func deriveDPID(lab, bridge string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(lab))
	h.Write([]byte{0})
	h.Write([]byte(bridge))
	return h.Sum64() & 0xffffffffffff
}

func (i *Instance) transact(ctx context.Context, ops []ovsdb.Operation) error {
	_, err := i.transactResults(ctx, ops)
	return err
}

func (i *Instance) transactResults(ctx context.Context, ops []ovsdb.Operation) ([]ovsdb.OperationResult, error) {
	// Bounded like every call to a daemon of the lab (see CallTimeout): a
	// wedged ovsdb-server must fail the step, not hang it.
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	res, err := i.ovs.Transact(ctx, ops...)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("ovs: transact (%d ops): no answer from ovsdb-server (%s) within %v", len(ops), i.DBSocket(), CallTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("ovs: transact (%d ops): %w", len(ops), err)
	}
	if _, err := ovsdb.CheckOperationResults(res, ops); err != nil {
		return nil, fmt.Errorf("ovs: transact (%d ops): %w", len(ops), err)
	}
	return res, nil
}

// waitRootUUID waits for the monitor to deliver the Open_vSwitch row.
func (i *Instance) waitRootUUID(ctx context.Context) (string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		u, err := i.rootUUID()
		if err == nil || time.Now().After(deadline) {
			return u, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// WaitPorts waits until ovs-vswitchd has attached every port of bridges
// (Interface.ofport assigned). Interfaces that report an error fail the
// wait at once, listed by name.
func (i *Instance) WaitPorts(ctx context.Context, bridges []Bridge, timeout time.Duration) error {
	root, err := i.prepare(ctx, nil)
	if err != nil {
		return err
	}
	// Once vswitchd has applied a configuration raised after the ports
	// went in, it has tried every one of them.
	return i.applyPorts(ctx, root, nil, bridges, timeout)
}

// applyPorts commits ops (none: it only raises next_cfg), waits until
// ovs-vswitchd has applied them, then until every port of bridges has
// attached, all within timeout.
func (i *Instance) applyPorts(ctx context.Context, root string, ops []ovsdb.Operation, bridges []Bridge, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := i.transactAndWait(ctx, root, ops, timeout); err != nil {
		return err
	}
	return i.awaitPorts(ctx, bridges)
}

// awaitPorts reads the interfaces' ofports and errors until every port of
// bridges has its ofport or one has failed, or ctx ends. After
// transactAndWait the first read settles it (a port vswitchd could not
// open has its error in the same transaction as cur_cfg); reading again
// is a fallback.
func (i *Instance) awaitPorts(ctx context.Context, bridges []Bridge) error {
	want := map[string]bool{}
	for _, b := range bridges {
		for _, p := range b.Ports {
			want[p.Name] = true
		}
	}
	for {
		ifaces, err := selectRows[vswitchd.Interface](ctx, i, vswitchd.InterfaceTable, "name", "ofport", "error")
		if err != nil {
			return err
		}
		pending := len(want)
		var failed []string
		for _, it := range ifaces {
			if !want[it.Name] {
				continue
			}
			switch {
			case it.Error != nil && *it.Error != "":
				failed = append(failed, fmt.Sprintf("%s: %s", it.Name, *it.Error))
			case it.Ofport != nil && *it.Ofport > 0:
				pending--
			}
		}
		if len(failed) > 0 {
			slices.Sort(failed)
			return fmt.Errorf("ovs: %d interface(s) failed to attach: %s", len(failed), strings.Join(failed, "; "))
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ovs: %d of %d ports not attached: %w", pending, len(want), ctx.Err())
		case <-i.cur.changed:
		case <-time.After(100 * time.Millisecond): // vswitchd's own reconfigurations raise no cur_cfg
		}
	}
}

// selectRows reads the named columns of every row of table from the
// database, as models of type T (a vswitchd row type).
func selectRows[T any](ctx context.Context, i *Instance, table string, columns ...string) ([]T, error) {
	res, err := i.transactResults(ctx, []ovsdb.Operation{{Op: ovsdb.OperationSelect, Table: table, Columns: columns}})
	if err != nil {
		return nil, err
	}
	tc := i.ovs.Cache()
	dbm, m := tc.DatabaseModel(), tc.Mapper()
	out := make([]T, len(res[0].Rows))
	for k := range out {
		row := res[0].Rows[k]
		info, err := dbm.NewModelInfo(&out[k])
		if err == nil {
			err = m.GetRowData(&row, info)
		}
		// The mapper fills the schema's columns, which leave out _uuid.
		if u, ok := row["_uuid"].(ovsdb.UUID); ok && err == nil {
			err = info.SetField("_uuid", u.GoUUID)
		}
		if err != nil {
			return nil, fmt.Errorf("ovs: %s row: %w", table, err)
		}
	}
	return out, nil
}

// Bridges lists the instance's bridges with their ports as attached.
func (i *Instance) Bridges(ctx context.Context) ([]BridgeInfo, error) {
	if err := i.connect(ctx); err != nil {
		return nil, err
	}
	brs, err := selectRows[vswitchd.Bridge](ctx, i, vswitchd.BridgeTable, "_uuid", "name", "ports", "external_ids", "datapath_id")
	if err != nil {
		return nil, err
	}
	ports, err := selectRows[vswitchd.Port](ctx, i, vswitchd.PortTable, "_uuid", "name", "interfaces")
	if err != nil {
		return nil, err
	}
	ifaces, err := selectRows[vswitchd.Interface](ctx, i, vswitchd.InterfaceTable, "_uuid", "name", "ofport", "error")
	if err != nil {
		return nil, err
	}
	portByUUID := make(map[string]*vswitchd.Port, len(ports))
	for k := range ports {
		portByUUID[ports[k].UUID] = &ports[k]
	}
	ifByUUID := make(map[string]*vswitchd.Interface, len(ifaces))
	for k := range ifaces {
		ifByUUID[ifaces[k].UUID] = &ifaces[k]
	}
	out := make([]BridgeInfo, 0, len(brs))
	for _, b := range brs {
		bi := BridgeInfo{Name: b.Name, ExternalIDs: b.ExternalIDs}
		if b.DatapathID != nil {
			bi.DatapathID = *b.DatapathID
		}
		for _, pu := range b.Ports {
			p := portByUUID[pu]
			if p == nil {
				continue
			}
			pi := PortInfo{Name: p.Name, OFPort: -1}
			if len(p.Interfaces) > 0 {
				if it := ifByUUID[p.Interfaces[0]]; it != nil {
					if it.Ofport != nil {
						pi.OFPort = *it.Ofport
					}
					if it.Error != nil {
						pi.Error = *it.Error
					}
				}
			}
			bi.Ports = append(bi.Ports, pi)
		}
		slices.SortFunc(bi.Ports, func(a, b PortInfo) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, bi)
	}
	slices.SortFunc(out, func(a, b BridgeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
