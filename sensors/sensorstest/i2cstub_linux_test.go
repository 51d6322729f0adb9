package sensorstest

import (
	"testing"
	"unsafe"
)

// TestI2CSMBusIoctlDataLayout: struct i2c_smbus_ioctl_data is two bytes, a
// 32-bit size at offset 4 and a pointer after it, 12 bytes on 32-bit ARM
// and 16 on 64-bit machines.
func TestI2CSMBusIoctlDataLayout(t *testing.T) {
	var d i2cSMBusIoctlData
	want := uintptr(8 + unsafe.Sizeof(uintptr(0)))
	if unsafe.Sizeof(d) != want || unsafe.Offsetof(d.Size) != 4 || unsafe.Offsetof(d.Data) != 8 {
		t.Errorf("size %d (want %d), size at %d (want 4), data at %d (want 8)", unsafe.Sizeof(d), want, unsafe.Offsetof(d.Size), unsafe.Offsetof(d.Data))
	}
}
