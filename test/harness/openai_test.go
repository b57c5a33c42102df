package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI dialects: the Responses API (POST /v1/responses), which Codex
// CLI speaks, and Chat Completions (POST /v1/chat/completions), which
// opencode's OpenAI-compatible providers speak. Both stream with SSE.

// responsesShellTools are the names Codex gives its shell tool, newest
// first: exec_command (unified exec, {"cmd": "..."}; Codex 0.171 offers
// only this one), shell_command ({"command": "...", "timeout_ms": N}) and
// shell ({"command": ["bash", "-lc", "..."], "timeout_ms": N}).
var responsesShellTools = []string{"exec_command", "shell_command", "shell"}

// responsesRequest is what the dialect reads of a Responses API request.
type responsesRequest struct {
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Input []struct {
		Type   string          `json:"type"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	} `json:"input"`
}

// responsesDialect is the Responses API as Codex CLI 0.171 reads it: a
// response.created event, each output item as response.output_item.added
// and response.output_item.done, then response.completed with the usage
// (Codex retries a stream that ends without it).
type responsesDialect struct{}

func parseResponses(body []byte) responsesRequest {
	var req responsesRequest
	_ = json.Unmarshal(body, &req) // a body that is no request offers no tool: a side request
	return req
}

// shellTool is the first of responsesShellTools the request offers ("" for none).
func (req responsesRequest) shellTool() string {
	for _, name := range responsesShellTools {
		for _, tool := range req.Tools {
			if tool.Type == "function" && tool.Name == name {
				return name
			}
		}
	}
	return ""
}

func (responsesDialect) conversation(body []byte) bool {
	return parseResponses(body).shellTool() != ""
}

// results are the outputs of the function calls the request's input
// carries: a string, or a list of content items whose texts are joined.
func (responsesDialect) results(body []byte) []string {
	var out []string
	for _, item := range parseResponses(body).Input {
		switch item.Type {
		case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
			out = append(out, outputText(item.Output))
		}
	}
	return out
}

// outputText is a tool output as the model reads it: a JSON string, or the
// texts of a list of content items ({"type": "input_text", "text": ...}).
func outputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var items []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &items) == nil {
		var b strings.Builder
		for _, it := range items {
			b.WriteString(it.Text)
		}
		return b.String()
	}
	return string(raw)
}

func (responsesDialect) answer(w http.ResponseWriter, r *http.Request, body []byte, i int, tr turn) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	id := fmt.Sprintf("resp_%d", i+1)
	var item map[string]any
	if tr.command != "" {
		item = map[string]any{
			"type": "function_call", "id": fmt.Sprintf("fc_%d", i+1), "call_id": fmt.Sprintf("call_%d", i+1),
			"status": "completed", "name": parseResponses(body).shellTool(), "arguments": responsesArguments(parseResponses(body).shellTool(), tr),
		}
	} else {
		item = map[string]any{
			"type": "message", "id": fmt.Sprintf("msg_%d", i+1), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": tr.text, "annotations": []any{}}},
		}
	}
	s := newSSE(w)
	s.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress"}})
	s.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	s.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "status": "completed", "output": []any{item},
		"usage": map[string]any{
			"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": 15,
		},
	}})
}

// responsesArguments are the JSON arguments of a call of Codex's shell
// tool name running tr's command, with tr's timeout where the tool has one.
func responsesArguments(name string, tr turn) string {
	args := map[string]any{}
	switch name {
	case "exec_command":
		args["cmd"] = tr.command
	case "shell_command":
		args["command"] = tr.command
	default:
		args["command"] = []string{"bash", "-lc", tr.command}
	}
	switch {
	case tr.timeout <= 0:
	case name == "exec_command":
		// Unified exec has no timeout: it returns after yield_time_ms with
		// the command still running, as a session Codex keeps.
		args["yield_time_ms"] = tr.timeout.Milliseconds()
	default:
		args["timeout_ms"] = tr.timeout.Milliseconds()
	}
	b, _ := json.Marshal(args)
	return string(b)
}

// chatRequest is what the dialect reads of a Chat Completions request.
type chatRequest struct {
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// chatDialect is Chat Completions as opencode 1.18's OpenAI-compatible
// provider (@ai-sdk/openai-compatible) reads it: chunks whose deltas carry
// the text or the tool call, a last chunk with the finish reason, then
// "data: [DONE]". The shell tool is opencode's bash ({"command", "timeout"
// in milliseconds, "description"}).
type chatDialect struct{}

// chatShellTool is the name of opencode's shell tool.
const chatShellTool = "bash"

func parseChat(body []byte) chatRequest {
	var req chatRequest
	_ = json.Unmarshal(body, &req) // a body that is no request offers no tool: a side request
	return req
}

func (chatDialect) conversation(body []byte) bool {
	for _, tool := range parseChat(body).Tools {
		if tool.Function.Name == chatShellTool {
			return true
		}
	}
	return false
}

func (chatDialect) results(body []byte) []string {
	var out []string
	for _, m := range parseChat(body).Messages {
		if m.Role == "tool" {
			out = append(out, outputText(m.Content))
		}
	}
	return out
}

func (chatDialect) answer(w http.ResponseWriter, r *http.Request, body []byte, i int, tr turn) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) {
		s.event("", map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", i+1), "object": "chat.completion.chunk", "created": 1, "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
	}
	if tr.command != "" {
		args := map[string]any{"command": tr.command, "description": "scripted command"}
		if tr.timeout > 0 {
			args["timeout"] = tr.timeout.Milliseconds()
		}
		b, _ := json.Marshal(args)
		chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{
			"index": 0, "id": fmt.Sprintf("call_%d", i+1), "type": "function",
			"function": map[string]any{"name": chatShellTool, "arguments": string(b)},
		}}}, nil)
		chunk(map[string]any{}, "tool_calls")
	} else {
		chunk(map[string]any{"role": "assistant", "content": tr.text}, nil)
		chunk(map[string]any{}, "stop")
	}
	s.event("", map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", i+1), "object": "chat.completion.chunk", "created": 1, "model": "scripted",
		"choices": []any{}, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
	s.event("", "[DONE]")
}
