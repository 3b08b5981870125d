// kstatus-judge: reads Kubernetes objects as a stream of JSON values on stdin and prints, one JSON
// line per object, what sigs.k8s.io/cli-utils/pkg/kstatus/status (the library Flux and kpt use to
// wait for resources) computes for it. The end-to-end tests feed it RunpodRuns captured from real runs.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

func main() {
	in := json.NewDecoder(bufio.NewReader(os.Stdin))
	out := json.NewEncoder(os.Stdout)
	for {
		var raw json.RawMessage
		if err := in.Decode(&raw); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "kstatus-judge: reading stdin: %v\n", err)
			os.Exit(2)
		}
		if err := out.Encode(judge(raw)); err != nil {
			fmt.Fprintf(os.Stderr, "kstatus-judge: writing stdout: %v\n", err)
			os.Exit(2)
		}
	}
}

func judge(raw json.RawMessage) verdict {
	// Unstructured's own decoder keeps integers as int64, as kstatus's generation check requires.
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(raw); err != nil {
		return verdict{Error: err.Error()}
	}
	result, err := status.Compute(object)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	return verdict{Status: result.Status.String(), Message: result.Message}
}
