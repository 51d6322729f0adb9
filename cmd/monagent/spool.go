package main

// spoolCmd handles 'monagent spool ...' (replay-deadletter lands with the
// shipping work of issue 10).
func spoolCmd(args []string) error {
	return usageError("spool: no subcommand yet")
}
