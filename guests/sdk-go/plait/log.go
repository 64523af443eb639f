package plait

import (
	"fmt"
	"strings"

	runtimelogging "github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/function-sdk-go/logging"

	"github.com/plait-dev/plait/guests/sdk-go/component"
)

// NewLogger returns a logger for function-sdk-go's logging.Logger that
// writes through the host's log import: each line is attributed to the
// step and capped in size by the host. Key-value pairs follow the message
// as key=value.
func NewLogger() logging.Logger {
	return hostLogger{}
}

type hostLogger struct {
	values []any
}

func (l hostLogger) Info(msg string, keysAndValues ...any) {
	component.Log(component.LogInfo, l.line(msg, keysAndValues))
}

func (l hostLogger) Debug(msg string, keysAndValues ...any) {
	component.Log(component.LogDebug, l.line(msg, keysAndValues))
}

func (l hostLogger) WithValues(keysAndValues ...any) runtimelogging.Logger {
	return hostLogger{values: append(append([]any(nil), l.values...), keysAndValues...)}
}

func (l hostLogger) line(msg string, keysAndValues []any) string {
	return FormatLine(msg, append(append([]any(nil), l.values...), keysAndValues...))
}

// FormatLine renders a message and its key-value pairs as one line; a key
// without a value is shown with the value "(missing)".
func FormatLine(msg string, keysAndValues []any) string {
	var b strings.Builder
	b.WriteString(msg)
	for i := 0; i < len(keysAndValues); i += 2 {
		var value any = "(missing)"
		if i+1 < len(keysAndValues) {
			value = keysAndValues[i+1]
		}
		fmt.Fprintf(&b, " %v=%v", keysAndValues[i], value)
	}
	return b.String()
}
