package control

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// Call sends one request to the control socket at path and returns the answer.
func Call(path string, req Request) (Response, error) {
	conn, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return Response{}, fmt.Errorf("no paddock supervisor is reachable at %s: %w", path, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	b, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("control socket %s: encode request: %w", path, err)
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return Response{}, fmt.Errorf("control socket %s: write: %w", path, err)
	}
	var resp Response
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&resp); err != nil {
		return Response{}, fmt.Errorf("control socket %s: read answer: %w", path, err)
	}
	return resp, nil
}
