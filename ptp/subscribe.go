package ptp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/timebase"
)

// IDSubscribeEventsNP is linuxptp's SUBSCRIBE_EVENTS_NP: a client asks ptp4l
// to send it a dataset whenever an event happens, for a while.
const IDSubscribeEventsNP protocol.ManagementID = 0xC003

// The events of SUBSCRIBE_EVENTS_NP's bitmask (linuxptp notification.h), each
// with the dataset ptp4l pushes for it.
const (
	NotifyPortState     = 0 // PORT_DATA_SET on every port state change (linuxptp 1.5+)
	NotifyTimeSync      = 1 // TIME_STATUS_NP on every Sync the servo uses (linuxptp 4.0+)
	NotifyParentDataSet = 2 // PARENT_DATA_SET when the parent changes (linuxptp 4.2+)
)

// ErrSubscriptionRefused is ptp4l answering SUBSCRIBE_EVENTS_NP with an
// error status (a read-only socket, a ptp4l without it): poll instead.
var ErrSubscriptionRefused = errors.New("ptp4l refused SUBSCRIBE_EVENTS_NP")

// SubscribeConfig configures a Subscriber.
type SubscribeConfig struct {
	Domain uint8
	// Duration is how long ptp4l keeps each subscription (default 180 s,
	// at most 65535 s); the subscriber renews it every Duration/2.
	Duration time.Duration
	// Timeout bounds the wait for ptp4l's answer to each SET (default 1 s).
	Timeout time.Duration
	// Events are the NotifyX bits (default port state, time sync and
	// parent data set; a linuxptp without an event accepts it and never
	// sends it).
	Events []int
	// Dir is where the subscriber's own socket is bound (default: beside
	// ptp4l's), as Monitor.BindIn.
	Dir string
}

// Notification is one dataset ptp4l pushed: PORT_DATA_SET (Port),
// TIME_STATUS_NP (TimeStatus) or PARENT_DATA_SET (Parent), by ID.
type Notification struct {
	ID protocol.ManagementID
	// ReadNS is CLOCK_REALTIME when the datagram was read (ptp4l puts no
	// time into the dataset: it sends it as the event happens).
	ReadNS int64
	// Seq is ptp4l's sequence number for this subscriber.
	Seq uint16
	// Baseline marks PORT_DATA_SET as the subscriber's own GET answered
	// right after subscribing (each port's state then), not an event.
	Baseline   bool
	Port       PortDataSet
	TimeStatus protocol.TimeStatusNPTLV
	Parent     protocol.ParentDataSetTLV
}

// Subscriber subscribes to one ptp4l's events through its management socket
// and reads what it pushes. Its socket, bound beside ptp4l's, and its
// sourcePortIdentity (ptp4l keys subscribers by it) are its own for its
// life.
type Subscriber struct {
	clientSocket
	cfg   SubscribeConfig
	ident protocol.PortIdentity
	mask  [64]byte
	seq   uint16
	buf   [1500]byte
	lastN int // the last datagram's length (tests)

	Subscriptions atomic.Uint64 // SETs ptp4l acknowledged (the first and every renewal)
	Notifications atomic.Uint64 // datasets pushed
	Lost          atomic.Uint64 // notifications missing by ptp4l's sequence numbers
	Undecodable   atomic.Uint64 // datagrams that were neither an answer nor a notification
}

var subSeq atomic.Uint64

// NewSubscriber returns a subscriber to the ptp4l whose uds_address is
// socket; nothing is opened until Run.
func NewSubscriber(socket string, cfg SubscribeConfig) *Subscriber {
	if cfg.Duration <= 0 {
		cfg.Duration = 180 * time.Second
	}
	cfg.Duration = min(cfg.Duration, 65535*time.Second)
	if cfg.Duration < 2*time.Second {
		cfg.Duration = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.Events == nil {
		cfg.Events = []int{NotifyPortState, NotifyTimeSync, NotifyParentDataSet}
	}
	n := subSeq.Add(1)
	s := &Subscriber{clientSocket: clientSocket{socket: socket, local: localSocket(cfg.Dir, socket, "sub", n)}, cfg: cfg,
		// "monag" and a per-process number: not the polling monitor's identity.
		ident: protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(0x6d6f6e6167<<24 | n&0xffffff), PortNumber: uint16(os.Getpid())}}
	for _, e := range cfg.Events {
		if e >= 0 && e < 8*len(s.mask) {
			s.mask[e/8] |= 1 << (e % 8)
		}
	}
	return s
}

// LocalSocket is the path the subscriber binds while it runs.
func (s *Subscriber) LocalSocket() string { return s.local }

// request is a management message of action and id with data, from
// identity from.
func (s *Subscriber) request(from protocol.PortIdentity, action protocol.Action, id protocol.ManagementID, data []byte) []byte {
	s.seq++
	head := requestHead(s.seq, s.cfg.Domain)
	head.SourcePortIdentity = from
	head.ActionField = action
	b, _ := managementMessage(head, id, data) // a buffer's writes do not fail
	return b
}

// subscribeRequest is SET SUBSCRIBE_EVENTS_NP with the duration and mask
// (an empty mask ends the subscription).
func (s *Subscriber) subscribeRequest(mask *[64]byte) []byte {
	var d [66]byte
	binary.BigEndian.PutUint16(d[:], uint16(s.cfg.Duration/time.Second))
	copy(d[2:], mask[:])
	return s.request(s.ident, protocol.SET, IDSubscribeEventsNP, d[:])
}

// Run subscribes, then reads what ptp4l pushes and calls fn with each
// notification (valid during the call only), renewing the subscription every
// Duration/2, until ctx is done (then it ends the subscription and returns
// nil) or something fails: ptp4l refusing (ErrSubscriptionRefused: poll
// instead), not answering within the timeout, or the socket failing (ptp4l
// restarted: run again). Right after the first SET it asks for PORT_DATA_SET
// once and hands each port's answer to fn as a Baseline.
func (s *Subscriber) Run(ctx context.Context, fn func(*Notification)) error {
	if err := s.dial(); err != nil {
		return fmt.Errorf("ptp4l %s: subscribe: %w", s.socket, err)
	}
	c := s.conn
	acked := false
	defer func() {
		if acked { // best effort: ptp4l forgets us now rather than at the expiry
			var none [64]byte
			c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			c.Write(s.subscribeRequest(&none))
		}
		s.hangUp()
	}()
	defer context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Unix(1, 0)) })()

	send := func(req []byte) error {
		if _, err := c.Write(req); err != nil {
			return fmt.Errorf("ptp4l %s: subscribe: %w", s.socket, causeOr(ctx, opCause(err)))
		}
		return nil
	}
	if err := send(s.subscribeRequest(&s.mask)); err != nil {
		return err
	}
	setSeq := s.seq
	// ptp4l answers with action RESPONSE and addresses the answer to the
	// asker's identity, as it does its notifications to the subscriber's:
	// the GET asks as another identity to tell its answers apart.
	baseline := s.ident
	baseline.PortNumber++
	if err := send(s.request(baseline, protocol.GET, protocol.IDPortDataSet, nil)); err != nil {
		return err
	}
	renew := s.cfg.Duration / 2
	now := time.Now()
	awaiting, ackBy, renewAt := true, now.Add(s.cfg.Timeout), now.Add(renew)
	var last uint16
	haveLast := false
	var n Notification
	headSize := binary.Size(protocol.ManagementMsgHead{})
	for {
		deadline := renewAt
		if awaiting && ackBy.Before(deadline) {
			deadline = ackBy
		}
		c.SetReadDeadline(deadline)
		l, err := c.Read(s.buf[:])
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("ptp4l %s: subscription: %w", s.socket, opCause(err))
			}
			now := time.Now()
			if awaiting && !now.Before(ackBy) {
				return fmt.Errorf("ptp4l %s: no answer to SUBSCRIBE_EVENTS_NP within %v", s.socket, s.cfg.Timeout)
			}
			if !now.Before(renewAt) {
				if err := send(s.subscribeRequest(&s.mask)); err != nil {
					return err
				}
				setSeq, awaiting, ackBy, renewAt = s.seq, true, now.Add(s.cfg.Timeout), now.Add(renew)
			}
			continue
		}
		read := timebase.RealtimeNS()
		s.lastN = l
		msg := s.buf[:l]
		head, ok := decodeHead(msg)
		if l < headSize+6 || !ok || head.MessageType() != protocol.MessageManagement {
			s.Undecodable.Add(1)
			continue
		}
		typ := protocol.TLVType(binary.BigEndian.Uint16(msg[headSize:]))
		id := protocol.ManagementID(binary.BigEndian.Uint16(msg[headSize+4:]))
		if typ == protocol.TLVManagementErrorStatus {
			// managementErrorId, then the managementId it is about.
			if l >= headSize+8 && head.SequenceID == setSeq && protocol.ManagementID(binary.BigEndian.Uint16(msg[headSize+6:])) == IDSubscribeEventsNP {
				return fmt.Errorf("ptp4l %s: %w: %v", s.socket, ErrSubscriptionRefused, protocol.ManagementErrorID(id))
			}
			s.Undecodable.Add(1)
			continue
		}
		if typ != protocol.TLVManagement {
			s.Undecodable.Add(1)
			continue
		}
		if id == IDSubscribeEventsNP {
			if head.SequenceID == setSeq {
				awaiting, acked = false, true
				s.Subscriptions.Add(1)
			}
			continue
		}
		n = Notification{ID: id, ReadNS: read, Seq: head.SequenceID}
		switch head.TargetPortIdentity {
		case baseline:
			n.Baseline = true
		case s.ident:
		default:
			s.Undecodable.Add(1)
			continue
		}
		if !decodeNotification(msg, &n) {
			s.Undecodable.Add(1)
			continue
		}
		if !n.Baseline {
			s.Notifications.Add(1)
			// ptp4l numbers each subscriber's notifications from 0; a
			// gap is notifications lost (our socket's queue was full), a
			// jump back a new subscription (ptp4l restarted).
			if gap := n.Seq - last - 1; haveLast && n.Seq != last+1 && gap < 0x8000 {
				s.Lost.Add(uint64(gap))
			}
			last, haveLast = n.Seq, true
		}
		fn(&n)
	}
}

// decodeNotification decodes a pushed (or asked-for) dataset into n by its
// management id; false for one it does not know or cannot decode.
func decodeNotification(msg []byte, n *Notification) bool {
	switch n.ID {
	case protocol.IDPortDataSet:
		p, err := DecodePortDataSet(msg)
		n.Port = p
		return err == nil
	case IDTimeStatusNP, protocol.IDParentDataSet:
		var m protocol.Management
		if m.UnmarshalBinary(msg) != nil {
			return false
		}
		switch t := m.TLV.(type) {
		case *protocol.TimeStatusNPTLV:
			n.TimeStatus = *t
			return true
		case *protocol.ParentDataSetTLV:
			n.Parent = *t
			return true
		}
	}
	return false
}
