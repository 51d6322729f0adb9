package sockts

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// InterfaceTimestamping reads what an interface can timestamp
// (ETHTOOL_GET_TS_INFO). A driver without the ioctl timestamps nothing in
// hardware and has no PHC: that is no error.
func InterfaceTimestamping(iface string) (Timestamping, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return Timestamping{PHCIndex: -1}, fmt.Errorf("ethtool %s: socket: %w", iface, err)
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolTsInfo(fd, iface)
	if err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return Timestamping{PHCIndex: -1}, nil
		}
		return Timestamping{PHCIndex: -1}, fmt.Errorf("ethtool %s: ETHTOOL_GET_TS_INFO: %w", iface, err)
	}
	return timestampingOf(info), nil
}

func timestampingOf(info *unix.EthtoolTsInfo) Timestamping {
	return Timestamping{PHCIndex: int(info.Phc_index), SOFlags: info.So_timestamping, TxTypes: info.Tx_types, RxFilters: info.Rx_filters}
}
