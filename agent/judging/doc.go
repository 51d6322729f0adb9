// Package judging is the agent's judged clocks: each source's judged
// reference (a Judgement, judged by package judge), the vote across every
// reference of one clock (package vote), what they show on /status and
// /metrics, the records, log lines and webhooks their transitions and
// verdicts become, the judge's own tick, and the time API's writer
// (Publisher), which publishes each clock's combined answer to
// applications.
//
// A source adds its judged clock with Judges.Add and tells it each sample
// (Judgement.Observe) or each sample due that did not come (Missed); a nil
// Judgement (its judge off) judges nothing. The agent makes one Judges
// (New), runs Serve, and asks it for Status and Records.
package judging
