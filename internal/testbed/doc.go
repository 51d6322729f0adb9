// Package testbed starts the real peers monagent's integration tests talk to,
// and always cleans them up: influxd v1.8.10 (built once with go install into a
// cache directory and reused), and, as later issues land, chronyd, ptp4l,
// network namespaces with veth pairs and the QEMU kernel rig.
//
// Test-only: nothing outside _test.go files imports it.
package testbed
