package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/timebase"
)

// hcaUDP runs the experiment over loopback UDP: rank 0 (the driver) in this
// process, every other rank a 'monagent hca node' child with its virtual
// clock over this host's CLOCK_MONOTONIC_RAW, so that the true offsets are
// known. The children end when their standard input closes.
func hcaUDP(ctx context.Context, o *hcaOpts, p hca.Params, after []int64) (hca.Report, error) {
	clocks, err := hca.RandomClocks(o.nodes, o.seed, o.drift, int64(o.offset))
	if err != nil {
		return hca.Report{}, err
	}
	dir, err := os.MkdirTemp("", "monagent-hca-")
	if err != nil {
		return hca.Report{}, err
	}
	defer os.RemoveAll(dir)
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(raw)), 0o600); err != nil {
		return hca.Report{}, err
	}
	key, err := hca.LoadKey(keyFile)
	if err != nil {
		return hca.Report{}, err
	}
	session := uint64(time.Now().UnixNano())
	root, err := hca.Listen(hca.EndpointConfig{Addr: "127.0.0.1:0", Key: key, Session: session, Clock: virtualRaw(clocks, 0), AnswerDelay: o.answerDelay})
	if err != nil {
		return hca.Report{}, err
	}
	defer root.Close()
	addrs := []netip.AddrPort{root.LocalAddr()}
	var stdins []io.WriteCloser
	defer func() {
		for _, w := range stdins {
			w.Close()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return hca.Report{}, err
	}
	for r := 1; r < o.nodes; r++ {
		cmd := exec.CommandContext(ctx, self, "hca", "node", "--answer-delay", o.answerDelay.String(), strconv.Itoa(r), keyFile,
			strconv.FormatUint(session, 10), strconv.FormatFloat(clocks.Drift[r], 'g', -1, 64), strconv.FormatInt(clocks.Offset[r], 10))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return hca.Report{}, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return hca.Report{}, err
		}
		if err := cmd.Start(); err != nil {
			return hca.Report{}, fmt.Errorf("hca: starting rank %d: %w", r, err)
		}
		stdins = append(stdins, in)
		go func() { _ = cmd.Wait() }()
		line, err := bufio.NewReader(out).ReadString('\n')
		a, perr := netip.ParseAddrPort(strings.TrimSpace(line))
		if err != nil || perr != nil {
			return hca.Report{}, fmt.Errorf("hca: rank %d did not print its address: %q, %v", r, line, err)
		}
		addrs = append(addrs, a)
	}
	var peers strings.Builder
	for r, a := range addrs {
		fmt.Fprintf(&peers, "%d %s\n", r, a)
		if r > 0 {
			if err := root.SetPeer(r, a); err != nil {
				return hca.Report{}, err
			}
		}
	}
	peers.WriteString("go\n")
	for _, w := range stdins {
		if _, err := io.WriteString(w, peers.String()); err != nil {
			return hca.Report{}, fmt.Errorf("hca: giving a node its peers: %w", err)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = root.Serve(sctx) }()
	if err := waitReady(ctx, root, o.nodes); err != nil {
		return hca.Report{}, err
	}
	alg, err := hca.AlgorithmByName(o.algorithm)
	if err != nil {
		return hca.Report{}, err
	}
	net, err := hca.NewPeerNetwork(root, o.nodes)
	if err != nil {
		return hca.Report{}, err
	}
	res, err := alg.Sync(ctx, net, p)
	end := timebase.MonotonicRawNS()
	if err != nil {
		return hca.Report{}, fmt.Errorf("hca: %s over udp: %w", o.algorithm, err)
	}
	rep := hca.NewReport(res, "udp", o.seed, o.drift)
	rep.Checks = clocks.Evaluate(res, end, after)
	return rep, nil
}

// waitReady pings every rank until it answers (its Serve runs), for up to 10 s.
func waitReady(ctx context.Context, root *hca.Endpoint, n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for r := 1; r < n; r++ {
		for {
			_, err := root.Ping(ctx, r)
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("hca: rank %d not answering: %w", r, err)
			}
		}
	}
	return nil
}

// virtualRaw is rank's virtual clock over CLOCK_MONOTONIC_RAW.
func virtualRaw(c hca.Clocks, rank int) func() int64 {
	return func() int64 {
		t := timebase.MonotonicRawNS()
		return c.At(rank, t)
	}
}
