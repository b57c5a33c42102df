package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sse writes a response as server-sent events, each flushed as it is
// written, as the model APIs stream their answers.
type sse struct {
	w http.ResponseWriter
}

// newSSE starts an event stream on w.
func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w: w}
}

// event writes one event: its name (none when name is ""), then data,
// encoded as JSON unless it is a string already.
func (s sse) event(name string, data any) {
	var payload []byte
	switch d := data.(type) {
	case string:
		payload = []byte(d)
	default:
		b, err := json.Marshal(d)
		if err != nil {
			panic(fmt.Sprintf("sse: encode %T: %v", data, err))
		}
		payload = b
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", payload)
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}
