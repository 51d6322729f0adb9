// Package sockts gives UDP sockets kernel packet timestamps: SO_TIMESTAMPING
// (Documentation/networking/timestamping.rst) requested as SO_TIMESTAMPING_NEW,
// whose scm_timestamping64 control message has 64-bit seconds on every
// architecture, so 32-bit ARM reads the same layout as amd64 and survives 2038.
//
// Receive timestamps come in control messages next to the datagram; transmit
// timestamps come back on the socket's error queue (MSG_ERRQUEUE), matched to
// their send by SOF_TIMESTAMPING_OPT_ID. Each timestamp says where it came from:
// the NIC (hardware, in its PHC's domain), the kernel (software, REALTIME) or,
// when the kernel gave none in time, user space just around the system call.
//
// The control-message parser works on caller-owned buffers without allocating
// and knows both cmsghdr layouts (LP64: 16-byte header, 8-byte alignment; ILP32
// as on the BeagleBone: 12-byte header, 4-byte alignment), so golden vectors for
// either can be tested anywhere.
//
// The kernel enables receive timestamping (net_enable_timestamp) through a
// deferred static key when the first timestamping socket appears, so the first
// packets after that may arrive without one; they are labelled SourceUser.
//
// What a NIC can timestamp in hardware has its one answer here:
// InterfaceTimestamping reads ETHTOOL_GET_TS_INFO, and Timestamping.Hardware
// says whether the NIC stamps PTP event messages and NTP packets on receive and
// what it sends, naming its receive filters and transmit types as ethtool
// does. The sockets, phc (the PHC of an interface) and `monagent probe` ask it.
//
// Hardware timestamping is switched on with SIOCSHWTSTAMP, which changes the
// NIC's configuration for every socket (as ptp4l does); it is only done when
// asked for. Nothing here touches a clock.
package sockts
