package sensorstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// I2CStub is the bus of the kernel's i2c-stub (Documentation/i2c/i2c-stub.rst):
// chips that are register files, written here through /dev/i2c-N
// (Documentation/i2c/dev-interface.rst) and read by the real drivers bound
// to them with new_device. Tests only.
type I2CStub struct {
	Bus int    // N of i2c-N
	Dir string // /sys/bus/i2c/devices/i2c-N
	f   *os.File
}

// OpenI2CStub finds i2c-stub's adapter under sys (/sys) and opens its
// character device under dev (/dev; needs i2c-dev).
func OpenI2CStub(sys, dev string) (*I2CStub, error) {
	dirs, _ := filepath.Glob(filepath.Join(sys, "bus", "i2c", "devices", "i2c-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "name"))
		if err != nil || strings.TrimSpace(string(b)) != "SMBus stub driver" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "i2c-"))
		if err != nil {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dev, "i2c-"+strconv.Itoa(n)), os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("i2c-stub: %w", err)
		}
		return &I2CStub{Bus: n, Dir: d, f: f}, nil
	}
	return nil, fmt.Errorf("i2c-stub: no adapter named \"SMBus stub driver\" among %d under %s", len(dirs), sys)
}

// Close closes the character device.
func (s *I2CStub) Close() error { return s.f.Close() }

// i2cSMBusIoctlData is struct i2c_smbus_ioctl_data (uapi/linux/i2c-dev.h);
// Go's alignment gives the C layout on 32 and 64 bits.
type i2cSMBusIoctlData struct {
	ReadWrite uint8
	Command   uint8
	Size      uint32
	Data      unsafe.Pointer // union i2c_smbus_data: 34 bytes
}

// From uapi/linux/i2c-dev.h and uapi/linux/i2c.h (x/sys has neither).
const (
	i2cSlaveForce = 0x0706
	i2cSMBus      = 0x0720

	i2cSMBusWrite    = 0
	i2cSMBusRead     = 1
	i2cSMBusByteData = 2
	i2cSMBusWordData = 3
)

func (s *I2CStub) smbus(addr uint16, rw uint8, reg uint8, size uint32, data *[34]byte) error {
	if err := unix.IoctlSetInt(int(s.f.Fd()), i2cSlaveForce, int(addr)); err != nil {
		return fmt.Errorf("i2c-%d: I2C_SLAVE_FORCE 0x%02x: %w", s.Bus, addr, err)
	}
	arg := i2cSMBusIoctlData{ReadWrite: rw, Command: reg, Size: size, Data: unsafe.Pointer(data)}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, s.f.Fd(), i2cSMBus, uintptr(unsafe.Pointer(&arg)))
	if errno != 0 {
		return fmt.Errorf("i2c-%d: I2C_SMBUS 0x%02x register 0x%02x: %w", s.Bus, addr, reg, errno)
	}
	return nil
}

// WriteWordSwapped sets a chip's 16-bit register as the chips on the board
// hold them, most significant byte first on the bus (what the drivers read
// with i2c_smbus_read_word_swapped or a big-endian regmap).
func (s *I2CStub) WriteWordSwapped(addr uint16, reg uint8, v uint16) error {
	var d [34]byte
	d[0], d[1] = byte(v>>8), byte(v) // SMBus words are little endian on the wire
	return s.smbus(addr, i2cSMBusWrite, reg, i2cSMBusWordData, &d)
}

// ReadWordSwapped reads a register written by WriteWordSwapped (or a driver).
func (s *I2CStub) ReadWordSwapped(addr uint16, reg uint8) (uint16, error) {
	var d [34]byte
	if err := s.smbus(addr, i2cSMBusRead, reg, i2cSMBusWordData, &d); err != nil {
		return 0, err
	}
	return uint16(d[0])<<8 | uint16(d[1]), nil
}

// WriteReg8 sets a chip's 8-bit register.
func (s *I2CStub) WriteReg8(addr uint16, reg, v uint8) error {
	var d [34]byte
	d[0] = v
	return s.smbus(addr, i2cSMBusWrite, reg, i2cSMBusByteData, &d)
}

// NewDevice binds the driver of chip (lm75, ina226) to addr on the bus.
func (s *I2CStub) NewDevice(chip string, addr uint16) error {
	return s.busAttr("new_device", fmt.Sprintf("%s 0x%02x", chip, addr))
}

// DeleteDevice removes the device at addr (its driver unbinds first).
func (s *I2CStub) DeleteDevice(addr uint16) error {
	return s.busAttr("delete_device", fmt.Sprintf("0x%02x", addr))
}

func (s *I2CStub) busAttr(name, v string) error {
	if err := os.WriteFile(filepath.Join(s.Dir, name), []byte(v), 0); err != nil {
		return fmt.Errorf("i2c-%d: write %q to %s: %w", s.Bus, v, name, err)
	}
	return nil
}

// StubChips are the chips the rig's amd64 guest loads i2c-stub with
// ($MONAGENT_GUEST_I2C_STUB): an LM75 and an INA226 at their usual addresses.
const (
	StubLM75   = 0x48
	StubINA226 = 0x40
)

// RequireI2CStub opens the guest's i2c-stub, closed at the test's end, or
// skips the test where there is none.
func RequireI2CStub(t testing.TB) *I2CStub {
	t.Helper()
	if os.Getenv("MONAGENT_GUEST_I2C_STUB") != "0x48,0x40" {
		t.Skip("needs i2c-stub with chips at 0x48 and 0x40, i2c-dev, lm75 and ina2xx, as the rig's amd64 guest has them (MONAGENT_GUEST_I2C_STUB=0x48,0x40)")
	}
	s, err := OpenI2CStub("/sys", "/dev")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// BindChips binds the lm75 driver to the LM75 and ina2xx to the INA226 and
// removes both at the test's end.
func (s *I2CStub) BindChips(t testing.TB) {
	t.Helper()
	for _, c := range []struct {
		name string
		addr uint16
	}{{"lm75", StubLM75}, {"ina226", StubINA226}} {
		if err := s.NewDevice(c.name, c.addr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.DeleteDevice(c.addr) })
	}
}
