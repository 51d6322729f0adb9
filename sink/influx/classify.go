package influx

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
)

// capture is where the transport leaves the body of a failed write's answer:
// the client library decodes it into fields that have no room for the
// "error" of InfluxDB 1.8 and 3.x or the "data" of 3.x, and drops it.
type capture struct {
	status int
	body   []byte
}

type captureKey struct{}

// captureTransport compresses request bodies (gzip) when zippers is set,
// and keeps, for a request whose context carries a *capture, the body of an
// answer that is not a success (up to max bytes), handing the client library
// the same bytes.
type captureTransport struct {
	base    http.RoundTripper
	max     int64
	zippers chan *zipper // idle compressors; nil: do not compress
}

func (t captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.zippers != nil && req.Body != nil && req.Header.Get("Content-Encoding") == "" {
		var err error
		if req, err = t.gzipped(req); err != nil {
			return nil, err
		}
	}
	var handshake atomic.Pointer[error] // the TLS handshake's failure, if it failed
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if err != nil {
				handshake.Store(&err)
			}
		},
	}))
	resp, err := t.base.RoundTrip(req)
	if err != nil && handshake.Load() != nil {
		return nil, &tlsError{err}
	}
	if err != nil || resp.StatusCode < 300 {
		return resp, err
	}
	c, ok := req.Context().Value(captureKey{}).(*capture)
	if !ok {
		return resp, nil
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, t.max))
	resp.Body.Close()
	c.status, c.body = resp.StatusCode, body
	var rd io.Reader = bytes.NewReader(body)
	if rerr != nil {
		rd = io.MultiReader(rd, errReader{rerr})
	}
	resp.Body = io.NopCloser(rd)
	return resp, nil
}

// zipper is a gzip writer and its output, reused from request to request:
// the client library's own gzip takes a new writer (about 1 MiB) and a
// goroutine per request, and streams the body without a length.
type zipper struct {
	buf   bytes.Buffer
	zw    *gzip.Writer
	chunk [32 << 10]byte
}

// gzipped returns req with its body compressed and its length set. The
// compressor is idle again when the transport closes the body, that is, once
// it has stopped reading it.
func (t captureTransport) gzipped(req *http.Request) (*http.Request, error) {
	var z *zipper
	select {
	case z = <-t.zippers:
		z.buf.Reset()
		z.zw.Reset(&z.buf)
	default: // the shipper sends one request at a time: only while two are still closing
		z = &zipper{}
		z.zw = gzip.NewWriter(&z.buf)
	}
	idle := func() {
		select {
		case t.zippers <- z:
		default:
		}
	}
	// Through chunk: a strings.Reader's WriteTo would copy the whole body
	// into a []byte for the gzip writer.
	_, err := io.CopyBuffer(z.zw, struct{ io.Reader }{req.Body}, z.chunk[:])
	req.Body.Close()
	if err == nil {
		err = z.zw.Close()
	}
	if err != nil {
		idle()
		return nil, fmt.Errorf("influx: compressing the request: %w", err)
	}
	out := req.Clone(req.Context())
	out.Body = &closeOnce{Reader: bytes.NewReader(z.buf.Bytes()), close: idle}
	out.ContentLength = int64(z.buf.Len())
	out.GetBody = nil // the buffer is reused once the body is closed
	out.Header.Set("Content-Encoding", "gzip")
	return out, nil
}

// closeOnce is a request body that calls close once, on Close.
type closeOnce struct {
	*bytes.Reader
	close func()
	once  sync.Once
}

func (b *closeOnce) Close() error {
	b.once.Do(b.close)
	return nil
}

// tlsError is a request that failed because its connection's TLS handshake
// did: a certificate not trusted or for another name, a protocol or cipher
// the server refused, a server that does not speak TLS.
type tlsError struct{ err error }

func (e *tlsError) Error() string { return e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// httpClient is the client library's default HTTP client (proxy from the
// environment, 5 s to connect and to shake hands) with the shipper's
// transport, which compresses when cfg.Gzip.
func httpClient(cfg Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 5 * time.Second
	t := captureTransport{base: tr, max: 2*int64(cfg.BatchBytes) + 64<<10}
	if cfg.Gzip {
		t.zippers = make(chan *zipper, 2) // the transport may close a body after its answer came
	}
	return &http.Client{Timeout: cfg.Timeout, Transport: t}
}

// write sends lines as one request.
func (s *Shipper) write(ctx context.Context, lines []byte) error {
	rctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	s.capt = capture{}
	rctx = context.WithValue(rctx, captureKey{}, &s.capt)
	start := time.Now()
	s.requests.Add(1)
	err := s.api.WriteRecord(rctx, string(lines))
	s.lastLatency.Store(int64(time.Since(start)))
	return err
}

// classify says what a failed write means, from the body the transport kept
// or, without one, from what the client library decoded.
func classify(err error, c *capture) answer {
	var he *ihttp.Error
	if !errors.As(err, &he) || he.StatusCode == 0 {
		// No answer: the library's transport failed (he set), or it failed
		// before sending.
		a := answer{state: StateUnreachable, action: retry, msg: oneLine(err.Error())}
		switch {
		case isTLS(err):
			a.state = StateTLS
		case he == nil && !isNetwork(err):
			a.state, a.action = StateBadAnswer, hold
		}
		return a
	}
	var body []byte
	if c != nil && c.status == he.StatusCode {
		body = c.body
	}
	alt := ""
	if he.Err == nil { // the library read the body
		alt = he.Message
		if he.Code != "" && !strings.HasPrefix(he.Code, strconv.Itoa(he.StatusCode)) {
			alt = he.Code + ": " + alt // a JSON code, not the status line
		}
		if x := he.Header.Get("X-Influxdb-Error"); x != "" {
			alt = x
		}
	}
	a := parseAnswer(he.StatusCode, body, alt)
	if he.RetryAfter > 0 {
		a.retryAfter = time.Duration(he.RetryAfter) * time.Second
	}
	return a
}

func (s *Shipper) classify(err error) answer { return classify(err, &s.capt) }

// describe is the answer for Stats.LastError.
func (a answer) describe() string {
	if a.status == 0 {
		return a.msg
	}
	return fmt.Sprintf("HTTP %d: %s", a.status, a.msg)
}

func isNetwork(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed)
}

// isTLS reports a TLS failure: a handshake that failed (tlsError, as the
// transport saw it), or a certificate or TLS error of its own type.
func isTLS(err error) bool {
	var (
		hs   *tlsError
		rec  tls.RecordHeaderError
		cv   *tls.CertificateVerificationError
		ua   x509.UnknownAuthorityError
		hn   x509.HostnameError
		inv  x509.CertificateInvalidError
		alrt tls.AlertError
	)
	return errors.As(err, &hs) || errors.As(err, &rec) || errors.As(err, &cv) || errors.As(err, &ua) ||
		errors.As(err, &hn) || errors.As(err, &inv) || errors.As(err, &alrt)
}
