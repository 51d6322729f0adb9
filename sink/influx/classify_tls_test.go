package influx

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/monagent/monagent/sink/spool"
)

// A failed TLS handshake is StateTLS whatever its error's type: the
// transport sees the handshake fail (an untrusted certificate is an x509
// error; a server refusing every version the client offers answers with an
// alert, which reaches the client as a remote error of no exported type).
// A server that is not there stays unreachable.
func TestFailedHandshakeIsTLS(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	quiet := log.New(io.Discard, "", 0) // the servers' own handshake errors
	untrusted := httptest.NewUnstartedServer(ok)
	untrusted.Config.ErrorLog = quiet
	untrusted.StartTLS()
	defer untrusted.Close()
	oldOnly := httptest.NewUnstartedServer(ok)
	oldOnly.Config.ErrorLog = quiet
	oldOnly.TLS = &tls.Config{MaxVersion: tls.VersionTLS11} // the client offers 1.2 and 1.3
	oldOnly.StartTLS()
	defer oldOnly.Close()
	gone := httptest.NewServer(ok)
	goneURL := gone.URL
	gone.Close()
	for _, c := range []struct {
		name, url, want string
	}{
		{"untrusted certificate", untrusted.URL, StateTLS},
		{"no common version", oldOnly.URL, StateTLS},
		{"nobody listening", goneURL, StateUnreachable},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp, err := spool.Open(spool.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			sh, err := New(Config{URL: c.url, Bucket: "b", Timeout: 5 * time.Second}, sp)
			if err != nil {
				t.Fatal(err)
			}
			err = sh.write(context.Background(), []byte("m v=1 1\n"))
			if err == nil {
				t.Fatal("the write succeeded")
			}
			if a := sh.classify(err); a.state != c.want || a.action != retry {
				t.Errorf("%v: state %s, action %v; want %s, retry", err, a.state, a.action, c.want)
			}
		})
	}
}
