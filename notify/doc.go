// Package notify delivers events to webhook receivers as CloudEvents 1.0
// in structured mode (one JSON object, Content-Type
// application/cloudevents+json), from a bounded queue that never blocks the
// caller: each receiver has its own queue and sender, retries with
// exponential backoff, and counts what it could not deliver. A receiver
// that hangs costs its queue and nothing else.
//
// A receiver's URL may be a secret (Slack-style webhooks keep theirs in the
// path): a receiver is named by its index and host alone, in its stats and
// every error. Redirects are not followed: a 3xx is a failed delivery.
//
// Spec: https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/spec.md
// and its JSON format (json-format.md) and HTTP binding (http-protocol-binding.md).
package notify
