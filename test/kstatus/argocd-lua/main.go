// argocd-lua-judge: runs an Argo CD resource-health Lua script (the file named by its one argument)
// on each Kubernetes object of a JSON stream on stdin, in the interpreter Argo CD embeds (gopher-lua)
// set up as Argo CD sets it up: only the package, base and table libraries and a safe os, `obj` as a
// global table, a one-second budget, the returned table's status checked against Argo CD's health
// codes. Prints one JSON verdict per object.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

// The health codes Argo CD accepts from a script; anything else it shows as Unknown.
var healthCodes = map[string]bool{"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: argocd-lua-judge HEALTH.lua < objects.json")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "argocd-lua-judge: %v\n", err)
		os.Exit(2)
	}
	in := json.NewDecoder(bufio.NewReader(os.Stdin))
	out := json.NewEncoder(os.Stdout)
	for {
		var raw json.RawMessage
		if err := in.Decode(&raw); errors.Is(err, io.EOF) {
			return
		} else if err != nil {
			fmt.Fprintf(os.Stderr, "argocd-lua-judge: reading stdin: %v\n", err)
			os.Exit(2)
		}
		if err := out.Encode(judge(string(script), raw)); err != nil {
			fmt.Fprintf(os.Stderr, "argocd-lua-judge: writing stdout: %v\n", err)
			os.Exit(2)
		}
	}
}

func judge(script string, raw json.RawMessage) verdict {
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(raw); err != nil {
		return verdict{Error: err.Error()}
	}
	state := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer state.Close()
	// In order: the safe os registers itself in package.loaded.
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.OsLibName, openSafeOs}} {
		if err := state.CallByParam(lua.P{Fn: state.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return verdict{Error: err.Error()}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	state.SetContext(ctx)
	state.SetGlobal("obj", toLua(state, object.Object))
	if err := state.DoString(script); err != nil {
		return verdict{Error: err.Error()}
	}
	hs, ok := state.Get(-1).(*lua.LTable)
	if !ok {
		return verdict{Error: fmt.Sprintf("the script returned %s, not a table", state.Get(-1).Type())}
	}
	status, message := lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
	if !healthCodes[status] {
		return verdict{Status: "Unknown", Message: "Lua returned an invalid health status"}
	}
	return verdict{Status: status, Message: message}
}

// openSafeOs is the os library without what touches the machine: time and date only, also for require("os").
func openSafeOs(state *lua.LState) int {
	state.Push(state.NewFunction(lua.OpenOs))
	state.Push(lua.LString(lua.OsLibName))
	state.Call(1, 1)
	full, _ := state.Get(-1).(*lua.LTable)
	state.Pop(1)
	safe := state.NewTable()
	for _, name := range []string{"time", "date", "clock", "difftime"} {
		if full != nil {
			safe.RawSetString(name, full.RawGetString(name))
		}
	}
	state.SetGlobal(lua.OsLibName, safe)
	if loaded, ok := state.GetField(state.GetGlobal("package"), "loaded").(*lua.LTable); ok {
		loaded.RawSetString(lua.OsLibName, safe)
	}
	state.Push(safe)
	return 1
}

// toLua turns an object as decoded from JSON into Lua values: maps and lists become tables
// (lists 1-based), numbers LNumber, null nil.
func toLua(state *lua.LState, value interface{}) lua.LValue {
	switch v := value.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []interface{}:
		list := state.CreateTable(len(v), 0)
		for _, item := range v {
			list.Append(toLua(state, item))
		}
		return list
	case map[string]interface{}:
		table := state.CreateTable(0, len(v))
		for key, item := range v {
			table.RawSetString(key, toLua(state, item))
		}
		return table
	}
	return lua.LNil
}
