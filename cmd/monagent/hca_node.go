package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/monagent/monagent/hca"
)

// hcaNode is one agent of 'monagent hca sim --transport udp': arguments
// [--answer-delay D] RANK KEYFILE SESSION DRIFT OFFSET_NS. It prints its
// address, reads "RANK ADDR" lines up to "go" from standard input, answers
// pings and runs until standard input closes.
func hcaNode(args []string) error {
	fs := flag.NewFlagSet("hca node", flag.ContinueOnError)
	delay := fs.Duration("answer-delay", 0, "every ping-pong waits this long more (hca.EndpointConfig.AnswerDelay)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return usageError("hca node: " + err.Error())
	}
	if *delay < 0 {
		return usageError(fmt.Sprintf("hca node: --answer-delay %v: want a duration ≥ 0", *delay))
	}
	args = fs.Args()
	if len(args) != 5 {
		return usageError("hca node: want [--answer-delay D] RANK KEYFILE SESSION DRIFT OFFSET_NS (started by 'hca sim --transport udp')")
	}
	rank, err1 := strconv.Atoi(args[0])
	session, err2 := strconv.ParseUint(args[2], 10, 64)
	drift, err3 := strconv.ParseFloat(args[3], 64)
	offset, err4 := strconv.ParseInt(args[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || rank < 1 {
		return usageError(fmt.Sprintf("hca node: bad arguments %q", args))
	}
	key, err := hca.LoadKey(args[1])
	if err != nil {
		return err
	}
	clocks := hca.Clocks{Drift: make([]float64, rank+1), Offset: make([]int64, rank+1)}
	clocks.Drift[rank], clocks.Offset[rank] = drift, offset
	ep, err := hca.Listen(hca.EndpointConfig{Addr: "127.0.0.1:0", Rank: rank, Key: key, Session: session, Clock: virtualRaw(clocks, rank), AnswerDelay: *delay})
	if err != nil {
		return err
	}
	defer ep.Close()
	fmt.Println(ep.LocalAddr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() && in.Text() != "go" {
		f := strings.Fields(in.Text())
		if len(f) != 2 {
			return fmt.Errorf("hca node %d: peer line %q: want RANK ADDR", rank, in.Text())
		}
		r, err := strconv.Atoi(f[0])
		a, perr := netip.ParseAddrPort(f[1])
		if err != nil || perr != nil {
			return fmt.Errorf("hca node %d: peer line %q: want RANK ADDR", rank, in.Text())
		}
		if r != rank {
			if err := ep.SetPeer(r, a); err != nil {
				return err
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for in.Scan() {
		}
		cancel()
	}()
	if err := ep.Serve(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}
