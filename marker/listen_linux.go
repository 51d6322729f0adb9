package marker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

type listenSocket struct {
	conn *net.UnixConn
	oob  []byte
}

// Listen binds the marker socket at path: under a temporary name, given its
// mode, then renamed to the path, so that it is never reachable with other
// permissions. A file already at the path is replaced only when it is a
// socket nobody listens on (a previous agent's, left by a crash); a live
// socket (ErrInUse) or any other file is an error.
func Listen(path string, mode os.FileMode) (*Listener, error) {
	if err := staleSocket(path); err != nil {
		return nil, err
	}
	tmp := path + "." + strconv.Itoa(os.Getpid()) + ".tmp"
	os.Remove(tmp) // a leftover of this pid's earlier attempt
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: tmp, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("marker socket %s: %w", path, err)
	}
	fail := func(err error) (*Listener, error) {
		conn.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("marker socket %s: %w", path, err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return fail(err)
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fail(err)
	}
	return &Listener{path: path, file: fi, stamps: enableStamps(conn), sock: listenSocket{conn: conn, oob: make([]byte, 64)}}, nil
}

// staleSocket is nil when path is free or a socket nobody listens on.
func staleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("marker socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("marker socket %s: exists and is not a socket (%s): not replaced", path, fi.Mode().Type())
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err == nil {
		c.Close()
		return fmt.Errorf("marker socket %s: %w", path, ErrInUse)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil // stale: replaced
	}
	return fmt.Errorf("marker socket %s: exists and cannot be checked, not replaced: %w", path, err)
}

// enableStamps asks the kernel to stamp each datagram (REALTIME, when the
// sender's sendmsg queued it): SO_TIMESTAMPNS_NEW (64-bit time on every
// target), else the old SO_TIMESTAMPNS; "" when neither is available.
func enableStamps(c *net.UnixConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	opt := ""
	rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, 1) == nil {
			opt = "SO_TIMESTAMPNS_NEW"
		} else if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_OLD, 1) == nil {
			opt = "SO_TIMESTAMPNS"
		}
	})
	return opt
}

// KernelStamp finds the SCM_TIMESTAMPNS stamp in a control buffer of layout
// l.
func KernelStamp(l sockts.Layout, oob []byte) (int64, bool) {
	for off := 0; off+l.HeaderLen <= len(oob); {
		var length int
		if l.HeaderLen == 16 {
			length = int(binary.NativeEndian.Uint64(oob[off:]))
		} else {
			length = int(binary.NativeEndian.Uint32(oob[off:]))
		}
		if length < l.HeaderLen || length > len(oob)-off {
			return 0, false
		}
		level := int32(binary.NativeEndian.Uint32(oob[off+l.HeaderLen-8:]))
		typ := int32(binary.NativeEndian.Uint32(oob[off+l.HeaderLen-4:]))
		data := oob[off+l.HeaderLen : off+length]
		if level == unix.SOL_SOCKET && (typ == unix.SO_TIMESTAMPNS_NEW || typ == unix.SO_TIMESTAMPNS_OLD) {
			switch len(data) {
			case 16: // __kernel_timespec, or timespec with a 64-bit time_t
				return int64(binary.NativeEndian.Uint64(data))*1e9 + int64(binary.NativeEndian.Uint64(data[8:])), true
			case 8: // timespec with a 32-bit time_t
				return int64(binary.NativeEndian.Uint32(data))*1e9 + int64(int32(binary.NativeEndian.Uint32(data[4:]))), true
			}
		}
		off += (length + l.Align - 1) &^ (l.Align - 1)
	}
	return 0, false
}

// Read waits for the next datagram, until ctx is done (then it returns
// ctx's error), and returns its length in buf, its arrival (REALTIME: the
// kernel's stamp, else the read's time) and whether the kernel stamped it.
// A datagram longer than buf is ErrTooLong, with its arrival. buf should
// hold MaxLen + 3 bytes (a line, its "\r\n" and one more to see a longer
// one).
func (l *Listener) Read(ctx context.Context, buf []byte) (n int, arrival int64, kernel bool, err error) {
	conn := l.sock.conn
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, l.sock.oob)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, 0, false, cerr
		}
		return 0, 0, false, fmt.Errorf("marker socket %s: read: %w", l.path, err)
	}
	read := timebase.RealtimeNS()
	arrival, ok := KernelStamp(sockts.NativeLayout(), l.sock.oob[:oobn])
	if !ok || arrival-read >= MaxSkewNS || read-arrival >= MaxSkewNS {
		arrival, ok = read, false
	}
	if flags&unix.MSG_TRUNC != 0 {
		return n, arrival, ok, fmt.Errorf("marker: line: %w", ErrTooLong)
	}
	return n, arrival, ok, nil
}

// Close closes the socket and removes its file, if the file is still the
// one it bound (a successor's socket is left alone).
func (l *Listener) Close() error {
	err := l.sock.conn.Close()
	if fi, e := os.Lstat(l.path); e == nil && os.SameFile(fi, l.file) {
		if e := os.Remove(l.path); e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return fmt.Errorf("marker socket %s: close: %w", l.path, err)
	}
	return nil
}
