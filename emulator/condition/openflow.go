package condition

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/ovs/openflow"
)

// ofWriter sets a switch's condition bitmask over its bridge's persistent
// OpenFlow connection (package openflow).
type ofWriter struct{ *openflow.Conn }

// dialOF connects to "unix:PATH" (fabric.Switch.Mgmt).
func dialOF(mgmt string) (*ofWriter, error) {
	c, err := openflow.Dial(mgmt)
	if err != nil {
		return nil, err
	}
	return &ofWriter{c}, nil
}

// conditionFlowMod rewrites the table-0 rule that loads the condition
// bitmask (controller: KindCondition, priority 0, no match): one
// OFPFC_MODIFY_STRICT, so the switch swaps the value atomically and keeps
// the rule's counters. Encoded here, not from a controller.Rule: it is
// the flip's hot path, one 88-byte buffer and nothing else.
func conditionFlowMod(xid uint32, mask uint64) []byte {
	const n = 48 + 8 + 24 + 8
	b := openflow.Header(openflow.TypeFlowMod, n, xid)
	be := binary.BigEndian
	cookie := controller.KindCondition.Cookie()
	be.PutUint64(b[8:], cookie)
	be.PutUint64(b[16:], ^uint64(0)) // cookie_mask: only ethfab's loader
	b[24] = controller.TableCondition
	b[25] = openflow.FlowModifyStrict
	// idle/hard timeout 0, priority 0 (controller.PrioMiss)
	be.PutUint16(b[30:], controller.PrioMiss)
	be.PutUint32(b[32:], openflow.NoBuffer)
	be.PutUint32(b[36:], openflow.PortAny)
	be.PutUint32(b[40:], openflow.GroupAny)
	// flags 0: keep the counters
	// ofp_match: OXM, no fields, padded to 8.
	be.PutUint16(b[48:], 1)
	be.PutUint16(b[50:], 4)
	i := b[56:]
	be.PutUint16(i[0:], openflow.InstructionMetadata)
	be.PutUint16(i[2:], 24)
	be.PutUint64(i[8:], mask)
	be.PutUint64(i[16:], ^uint64(0))
	be.PutUint16(i[24:], openflow.InstructionGoto)
	be.PutUint16(i[26:], 8)
	i[28] = controller.TableRouting
	return b
}

// setMask sends the FlowMod; with sync it also waits for a barrier, so the
// switch has applied it on return.
func (o *ofWriter) setMask(mask uint64, sync bool) error {
	if err := o.Write(conditionFlowMod(o.NextXID(), mask)); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	return o.barrier(5 * time.Second)
}

// setMaskAcked sends the FlowMod followed by a barrier in one write and
// returns the channel the barrier reply closes: the switch has applied
// the change to its flow table (its datapath follows when revalidated).
func (o *ofWriter) setMaskAcked(mask uint64) (<-chan struct{}, time.Time, error) {
	fm := conditionFlowMod(o.NextXID(), mask)
	barrier, p := o.BarrierMsg()
	at, err := o.WriteAt(append(fm, barrier...))
	if err != nil {
		o.Forget(p)
		return nil, at, err
	}
	return p.Done(), at, nil
}

// barrier returns once the switch has applied every FlowMod sent, and
// fails if it refused one.
func (o *ofWriter) barrier(timeout time.Duration) error {
	errs := o.Rejected()
	if err := o.Barrier(context.Background(), timeout); err != nil {
		return err
	}
	if o.Rejected() != errs {
		return fmt.Errorf("switch rejected the condition FlowMod: %w", o.LastError())
	}
	return nil
}

func (o *ofWriter) rejected() uint64 { return o.Rejected() }

func (o *ofWriter) sendFrame(port int, frame []byte) error { return o.SendFrame(port, frame) }

func (o *ofWriter) close() { o.Close() }
