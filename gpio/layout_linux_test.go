package gpio

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The numbers below are read off include/uapi/linux/gpio.h (Linux 6.1): every
// field is __u32, char[32] or __aligned_u64, so they are the same on every
// architecture; these tests also run as linux/arm under qemu-arm, where Go
// aligns uint64 to 4 bytes and only explicit padding keeps them right.
func TestStructLayout(t *testing.T) {
	type field struct {
		name      string
		got, want uintptr
	}
	var (
		ev   unix.GPIOV2LineEvent
		attr unix.GPIOV2LineAttribute
		ca   unix.GPIOV2LineConfigAttribute
		cfg  unix.GPIOV2LineConfig
		req  unix.GPIOV2LineRequest
		li   unix.GPIOV2LineInfo
		ic   unix.GPIOV2LineInfoChanged
		ci   unix.GPIOChipInfo
		lv   unix.GPIOV2LineValues
	)
	for _, f := range []field{
		{"sizeof gpio_v2_line_event", unsafe.Sizeof(ev), EventSize},
		{"gpio_v2_line_event.timestamp_ns", unsafe.Offsetof(ev.Timestamp_ns), evTimestamp},
		{"gpio_v2_line_event.id", unsafe.Offsetof(ev.Id), evID},
		{"gpio_v2_line_event.offset", unsafe.Offsetof(ev.Offset), evOffset},
		{"gpio_v2_line_event.seqno", unsafe.Offsetof(ev.Seqno), evSeqno},
		{"gpio_v2_line_event.line_seqno", unsafe.Offsetof(ev.Line_seqno), evLineSeqno},
		{"gpio_v2_line_event.id (header)", evID, 8},
		{"gpio_v2_line_event.line_seqno (header)", evLineSeqno, 20},

		{"sizeof gpio_v2_line_attribute", unsafe.Sizeof(attr), 16},
		{"gpio_v2_line_attribute.id", unsafe.Offsetof(attr.Id), 0},
		{"gpio_v2_line_attribute union (64-bit, 8-aligned)", unsafe.Offsetof(attr.Flags), 8},
		{"sizeof gpio_v2_line_config_attribute", unsafe.Sizeof(ca), 24},
		{"gpio_v2_line_config_attribute.mask", unsafe.Offsetof(ca.Mask), 16},

		{"sizeof gpio_v2_line_config", unsafe.Sizeof(cfg), 272},
		{"gpio_v2_line_config.flags", unsafe.Offsetof(cfg.Flags), 0},
		{"gpio_v2_line_config.num_attrs", unsafe.Offsetof(cfg.Num_attrs), 8},
		{"gpio_v2_line_config.attrs", unsafe.Offsetof(cfg.Attrs), 32},

		{"sizeof gpio_v2_line_request", unsafe.Sizeof(req), 592},
		{"gpio_v2_line_request.offsets", unsafe.Offsetof(req.Offsets), 0},
		{"gpio_v2_line_request.consumer", unsafe.Offsetof(req.Consumer), 256},
		{"gpio_v2_line_request.config", unsafe.Offsetof(req.Config), 288},
		{"gpio_v2_line_request.num_lines", unsafe.Offsetof(req.Num_lines), 560},
		{"gpio_v2_line_request.event_buffer_size", unsafe.Offsetof(req.Event_buffer_size), 564},
		{"gpio_v2_line_request.fd", unsafe.Offsetof(req.Fd), 588},

		{"sizeof gpio_v2_line_info", unsafe.Sizeof(li), LineInfoSize},
		{"gpio_v2_line_info.name", unsafe.Offsetof(li.Name), liName},
		{"gpio_v2_line_info.consumer", unsafe.Offsetof(li.Consumer), liConsumer},
		{"gpio_v2_line_info.offset", unsafe.Offsetof(li.Offset), liOffset},
		{"gpio_v2_line_info.num_attrs", unsafe.Offsetof(li.Num_attrs), liNumAttrs},
		{"gpio_v2_line_info.flags", unsafe.Offsetof(li.Flags), liFlags},
		{"gpio_v2_line_info.attrs", unsafe.Offsetof(li.Attrs), liAttrs},
		{"gpio_v2_line_info.offset (header)", liOffset, 64},
		{"gpio_v2_line_info.attrs (header)", liAttrs, 80},

		{"sizeof gpio_v2_line_info_changed", unsafe.Sizeof(ic), InfoChangedSize},
		{"gpio_v2_line_info_changed.timestamp_ns", unsafe.Offsetof(ic.Timestamp_ns), icTime},
		{"gpio_v2_line_info_changed.event_type", unsafe.Offsetof(ic.Event_type), icType},
		{"gpio_v2_line_info_changed.event_type (header)", icType, 264},

		{"sizeof gpiochip_info", unsafe.Sizeof(ci), 68},
		{"gpiochip_info.label", unsafe.Offsetof(ci.Label), 32},
		{"gpiochip_info.lines", unsafe.Offsetof(ci.Lines), 64},
		{"sizeof gpio_v2_line_values", unsafe.Sizeof(lv), 16},
	} {
		if f.got != f.want {
			t.Errorf("%s = %d, linux/gpio.h says %d", f.name, f.got, f.want)
		}
	}
}

// TestIoctlNumbers checks that each ioctl number encodes the size of the
// struct this package passes with it: _IOC(dir, 0xB4, nr, size) with the size
// in bits 16..29 (the generic encoding of arm, arm64 and amd64).
func TestIoctlNumbers(t *testing.T) {
	for _, c := range []struct {
		name string
		req  uint
		nr   uint
		size uintptr
	}{
		{"GPIO_GET_CHIPINFO_IOCTL", ioctlChipInfo, 0x01, unsafe.Sizeof(unix.GPIOChipInfo{})},
		{"GPIO_V2_GET_LINEINFO_IOCTL", ioctlLineInfo, 0x05, unsafe.Sizeof(unix.GPIOV2LineInfo{})},
		{"GPIO_V2_GET_LINEINFO_WATCH_IOCTL", ioctlWatch, 0x06, unsafe.Sizeof(unix.GPIOV2LineInfo{})},
		{"GPIO_V2_GET_LINE_IOCTL", ioctlGetLine, 0x07, unsafe.Sizeof(unix.GPIOV2LineRequest{})},
		{"GPIO_GET_LINEINFO_UNWATCH_IOCTL", ioctlUnwatch, 0x0C, 4},
	} {
		if got := uintptr(c.req>>16) & 0x3fff; got != c.size {
			t.Errorf("%s = %#x encodes size %d, the struct is %d", c.name, c.req, got, c.size)
		}
		if typ, nr := c.req>>8&0xff, c.req&0xff; typ != 0xB4 || nr != c.nr {
			t.Errorf("%s = %#x: type %#x nr %#x, want 0xb4 %#x", c.name, c.req, typ, nr, c.nr)
		}
	}
}

// TestEventSize: an Event travels through a ring by value; keep it small.
func TestEventSize(t *testing.T) {
	if s := unsafe.Sizeof(Event{}); s != 24 {
		t.Errorf("sizeof Event = %d, want 24", s)
	}
}
