// The console's audit trail as OpenTelemetry log records.

package otelconduit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/conduitmcp/conduit/gateway"
	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
)

// AuditEventName is the event name of an audit record's log record.
const AuditEventName = "conduit.audit"

// AuditRecord emits r, a record of conduit serve's audit trail, as a log
// record. Set it as gateway.ConsoleOptions.OnAudit. Each field of r that
// is set becomes an attribute "conduit.audit.FIELD", named as in r's
// JSON. The body says who did what in one line. A denial or an error is
// logged at WARN, anything else at INFO. Arguments are never in r: only
// their digest is.
func (t *Telemetry) AuditRecord(ctx context.Context, r gateway.AuditRecord) {
	var rec otellog.Record
	rec.SetEventName(AuditEventName)
	rec.SetTimestamp(r.Time)
	rec.SetBody(attribute.StringValue(auditBody(r)))
	rec.SetSeverity(otellog.SeverityInfo)
	rec.SetSeverityText("INFO")
	if r.Decision == "deny" || (r.Outcome != "" && r.Outcome != "ok") {
		rec.SetSeverity(otellog.SeverityWarn)
		rec.SetSeverityText("WARN")
	}
	rec.AddAttributes(auditAttrs(r)...)
	t.logger.Emit(ctx, rec)
}

// auditAttrs are r's fields that are set, by their JSON names, sorted.
func auditAttrs(r gateway.AuditRecord) []attribute.KeyValue {
	data, err := json.Marshal(r)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	delete(m, "time") // the record's timestamp
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]attribute.KeyValue, 0, len(keys))
	for _, k := range keys {
		key := "conduit.audit." + k
		switch v := m[k].(type) {
		case string:
			out = append(out, attribute.String(key, v))
		case bool:
			out = append(out, attribute.Bool(key, v))
		case float64:
			if v == float64(int64(v)) {
				out = append(out, attribute.Int64(key, int64(v)))
			} else {
				out = append(out, attribute.Float64(key, v))
			}
		default:
			b, _ := json.Marshal(v)
			out = append(out, attribute.String(key, string(b)))
		}
	}
	return out
}

// auditBody is r in one line: kind, who, what, and how it ended.
func auditBody(r gateway.AuditRecord) string {
	var b strings.Builder
	b.WriteString(r.Kind)
	if r.Principal != "" {
		fmt.Fprintf(&b, " by %s", r.Principal)
	}
	if r.Server != "" || r.Tool != "" {
		fmt.Fprintf(&b, ": %s/%s", r.Server, r.Tool)
	}
	if r.Decision != "" {
		fmt.Fprintf(&b, " %s", r.Decision)
	}
	if r.Approver != "" {
		fmt.Fprintf(&b, " (%s)", r.Approver)
	}
	if r.Outcome != "" {
		fmt.Fprintf(&b, ", %s", r.Outcome)
	}
	return b.String()
}
