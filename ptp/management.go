package ptp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/internal/closing"
)

// This file is what the Monitor and the Subscriber share of ptp4l's
// management socket: their own socket's name and connection, the messages
// they send and the heads of those they read.

// localSocket is the name of a client's own socket of kind ("pmc", "sub"),
// in dir or else beside ptp4l's socket: the process id and n, a number of
// the process's own, so that it is one name for the client's life.
func localSocket(dir, socket, kind string, n uint64) string {
	return filepath.Join(cmp.Or(dir, filepath.Dir(socket)), fmt.Sprintf("monagent-%s.%d.%d", kind, os.Getpid(), n))
}

// clientSocket is a client's own socket, bound at local while it is
// connected to ptp4l's socket and removed with the connection.
type clientSocket struct {
	socket, local string
	conn          *net.UnixConn
}

// dial binds local and connects it to ptp4l's socket; the error is the
// cause alone (opCause), for the caller to name.
func (c *clientSocket) dial() error {
	os.Remove(c.local)
	conn, err := net.DialUnix("unixgram", &net.UnixAddr{Name: c.local, Net: "unixgram"}, &net.UnixAddr{Name: c.socket, Net: "unixgram"})
	if err != nil {
		// The socket was bound before the connect failed: never leave it.
		os.Remove(c.local)
		return opCause(err)
	}
	c.conn = conn
	return nil
}

// hangUp closes the connection, if any, and removes local.
func (c *clientSocket) hangUp() error {
	if c.conn == nil {
		return nil
	}
	defer os.Remove(c.local)
	return closing.Clear(&c.conn)
}

// opCause is a net operation's cause without its addresses (our socket's
// name among them), so that one fault reads the same every time.
func opCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// causeOr is ctx's error when ctx ended the wait, else err.
func causeOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// requestHead is the head of a GET as pmc sends it (the library's), numbered
// seq, in domain.
func requestHead(seq uint16, domain uint8) protocol.ManagementMsgHead {
	head := protocol.CurrentDataSetRequest().ManagementMsgHead
	head.SetSequence(seq)
	head.SetDomainNumber(domain)
	return head
}

// managementMessage is head with one management TLV: id and data.
func managementMessage(head protocol.ManagementMsgHead, id protocol.ManagementID, data []byte) ([]byte, error) {
	tlv := binary.Size(protocol.ManagementTLVHead{}) + len(data)
	head.MessageLength = uint16(binary.Size(protocol.ManagementMsgHead{}) + tlv)
	var b bytes.Buffer
	if err := binary.Write(&b, binary.BigEndian, head); err != nil {
		return nil, err
	}
	if err := binary.Write(&b, binary.BigEndian, protocol.ManagementTLVHead{
		TLVHead: protocol.TLVHead{TLVType: protocol.TLVManagement, LengthField: uint16(2 + len(data))}, ManagementID: id}); err != nil {
		return nil, err
	}
	b.Write(data)
	return b.Bytes(), nil
}

// decodeHead decodes the head of a management message; false when msg is
// shorter.
func decodeHead(msg []byte) (protocol.ManagementMsgHead, bool) {
	var head protocol.ManagementMsgHead
	err := binary.Read(bytes.NewReader(msg), binary.BigEndian, &head)
	return head, err == nil
}

// isErrorStatus reports whether the TLV after a management message's head is
// MANAGEMENT_ERROR_STATUS.
func isErrorStatus(msg []byte) bool {
	off := binary.Size(protocol.ManagementMsgHead{})
	return len(msg) > off+2 && protocol.TLVType(binary.BigEndian.Uint16(msg[off:])) == protocol.TLVManagementErrorStatus
}
