package testbed

import (
	"fmt"
	"strings"
	"time"
)

// NMEASentence is body ("GPRMC,...") as a sentence: $, the body, * and
// its checksum (the XOR of the body's bytes), CR LF.
func NMEASentence(body string) string {
	var x byte
	for i := 0; i < len(body); i++ {
		x ^= body[i]
	}
	return fmt.Sprintf("$%s*%02X\r\n", body, x)
}

// NMEA fix the log describes: 10 satellites in view, 8 used; 2 in view
// in an epoch without a fix.
const (
	NMEASeen      = 10
	NMEAUsed      = 8
	NMEASeenNoFix = 2
)

// NMEAFix is a receiver's log of epochs one second apart from start (UTC,
// whole seconds): the first noFix epochs without a fix (RMC V, GGA quality
// 0, GSA mode 1), then a 3D fix at 48°07.038'N 11°31.000'E, 545.4 m, from
// NMEAUsed of NMEASeen satellites. Each epoch is six sentences: RMC, GGA,
// GSA and three GSV (a no-fix epoch: four, one GSV).
func NMEAFix(start time.Time, epochs, noFix int) []byte {
	var b strings.Builder
	for i := range epochs {
		t := start.UTC().Add(time.Duration(i) * time.Second)
		hms, dmy := t.Format("150405")+".00", t.Format("020106")
		if i < noFix {
			b.WriteString(NMEASentence("GPRMC," + hms + ",V,,,,,,," + dmy + ",,,N"))
			b.WriteString(NMEASentence("GPGGA," + hms + ",,,,,0,00,99.9,,M,,M,,"))
			b.WriteString(NMEASentence("GPGSA,A,1,,,,,,,,,,,,,99.9,99.9,99.9"))
			b.WriteString(NMEASentence("GPGSV,1,1,02,04,45,100,20,05,30,200,"))
			continue
		}
		b.WriteString(NMEASentence("GPRMC," + hms + ",A,4807.038,N,01131.000,E,0.0,0.0," + dmy + ",,,A"))
		b.WriteString(NMEASentence("GPGGA," + hms + ",4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
		b.WriteString(NMEASentence("GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,1.8,0.9,1.5"))
		b.WriteString(NMEASentence("GPGSV,3,1,10,04,45,100,40,05,30,200,38,09,60,050,42,12,20,300,35"))
		b.WriteString(NMEASentence("GPGSV,3,2,10,24,50,150,41,25,15,250,30,29,70,010,44,31,25,330,36"))
		b.WriteString(NMEASentence("GPGSV,3,3,10,02,05,090,,07,03,180,"))
	}
	return []byte(b.String())
}

// NMEA2D is log (NMEAFix's) with every fix 2D: GSA's mode 2 and GGA
// without the altitude. gpsd then sends TPV mode 2, and still a TOFF each
// epoch.
func NMEA2D(log []byte) []byte {
	var b strings.Builder
	for _, l := range strings.Split(string(log), "\r\n") {
		star := strings.IndexByte(l, '*')
		if len(l) == 0 || l[0] != '$' || star < 0 {
			continue
		}
		body := strings.Replace(l[1:star], "GPGSA,A,3,", "GPGSA,A,2,", 1)
		body = strings.Replace(body, ",545.4,M,46.9,M,", ",,M,,M,", 1)
		b.WriteString(NMEASentence(body))
	}
	return []byte(b.String())
}
