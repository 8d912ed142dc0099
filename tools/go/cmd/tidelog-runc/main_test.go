package main

import (
	"bytes"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSpecToEditFindsTheFileThatCarriesCapabilities(t *testing.T) {
	cases := []struct {
		args    []string
		path    string
		pointer []string
	}{
		{[]string{"--root", "/run/r", "--log", "l.json", "create", "--bundle", "/b", "id"},
			"/b/config.json", []string{"process"}},
		{[]string{"run", "--bundle=/b2", "id"}, "/b2/config.json", []string{"process"}},
		{[]string{"create", "id"}, "config.json", []string{"process"}},
		{[]string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"},
			"/tmp/p.json", nil},
		{[]string{"exec", "-p", "/tmp/q.json", "id"}, "/tmp/q.json", nil},
		{[]string{"--root", "/r", "start", "id"}, "", nil},
		{[]string{"--root", "/r", "delete", "--force", "create"}, "", nil},
		{[]string{"--version"}, "", nil},
	}
	for _, c := range cases {
		path, pointer := specToEdit(c.args)
		if path != c.path || !reflect.DeepEqual(pointer, c.pointer) {
			t.Errorf("specToEdit(%q) = %q, %q; want %q, %q", c.args, path, pointer, c.path, c.pointer)
		}
	}
}

func TestDropCapabilitiesRemovesWhatTheBoundingSetLacks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	spec := `{"ociVersion":"1.0.2","process":{"capabilities":{
		"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE","CAP_NET_ADMIN"],
		"effective":["CAP_SYS_RESOURCE"],
		"permitted":["CAP_CHOWN","CAP_SYS_RESOURCE","CAP_FUTURE_THING"]},
		"rlimits":[{"type":"RLIMIT_NOFILE","hard":18446744073709551615,"soft":1048576}]}}`
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	// Everything but bit 24 (CAP_SYS_RESOURCE), as on the machine that needed this.
	bounding, _ := new(big.Int).SetString("1fffeffffff", 16)
	if err := dropCapabilities(path, []string{"process"}, bounding); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Process struct {
			Capabilities map[string][]string
			Rlimits      []struct{ Hard json.Number }
		}
	}
	data, _ := os.ReadFile(path)
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber()
	if err := decoder.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"bounding":  {"CAP_CHOWN", "CAP_NET_ADMIN"},
		"effective": {},
		"permitted": {"CAP_CHOWN", "CAP_FUTURE_THING"},
	}
	if !reflect.DeepEqual(got.Process.Capabilities, want) {
		t.Errorf("capabilities = %v; want %v", got.Process.Capabilities, want)
	}
	if hard := got.Process.Rlimits[0].Hard; hard != "18446744073709551615" {
		t.Errorf("rlimit hard = %s; a large integer must survive unchanged", hard)
	}
}

func TestDropCapabilitiesLeavesAFileWithNothingToDropUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "process.json")
	original := `{"args":["sh"],  "capabilities":{"bounding":["CAP_CHOWN"]}}`
	if err := os.WriteFile(path, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	bounding, _ := new(big.Int).SetString("1fffeffffff", 16)
	if err := dropCapabilities(path, nil, bounding); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != original {
		t.Errorf("file rewritten to %s", data)
	}
}
