package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// sourceType is one entry of hack/data/ec2/instance-types.json. Every field of
// the source is listed, even the ones the catalog does not carry (allocatable,
// labels), so that a field added or renamed upstream stops the generator instead
// of being dropped silently. The README next to the data defines each field.
type sourceType struct {
	Name                      string            `json:"name"`
	Category                  string            `json:"category"`
	Family                    string            `json:"family"`
	Generation                int64             `json:"generation"`
	Size                      string            `json:"size"`
	Hypervisor                string            `json:"hypervisor"`
	EncryptionInTransit       bool              `json:"encryptionInTransit"`
	CapabilityFlex            bool              `json:"capabilityFlex"`
	CPU                       int64             `json:"cpu"`
	CPUManufacturer           string            `json:"cpuManufacturer"`
	CPUSustainedClockSpeedMhz int64             `json:"cpuSustainedClockSpeedMhz"`
	MemoryMiB                 int64             `json:"memoryMiB"`
	Arch                      string            `json:"arch"`
	OS                        string            `json:"os"`
	GPU                       *sourceGPU        `json:"gpu" nullable:"true"`
	Accelerator               *sourceAccel      `json:"accelerator" nullable:"true"`
	LocalNVMeGB               *int64            `json:"localNVMeGB" nullable:"true"`
	NetworkBandwidthMbps      *int64            `json:"networkBandwidthMbps" nullable:"true"`
	EBSBandwidthMbps          *int64            `json:"ebsBandwidthMbps" nullable:"true"`
	MaxPods                   int64             `json:"maxPods"`
	PodENI                    int64             `json:"podENI"`
	EFA                       int64             `json:"efa"`
	NvidiaGPU                 int64             `json:"nvidiaGPU"`
	AMDGPU                    int64             `json:"amdGPU"`
	AWSNeuron                 int64             `json:"awsNeuron"`
	AWSNeuronCore             int64             `json:"awsNeuronCore"`
	HabanaGaudi               int64             `json:"habanaGaudi"`
	Allocatable               json.RawMessage   `json:"allocatable"`
	ENILimitedMaxPods         *int64            `json:"eniLimitedMaxPods" nullable:"true"`
	VPCLimits                 *sourceVPCLimits  `json:"vpcLimits" nullable:"true"`
	Labels                    map[string]string `json:"labels"`
	Resources                 map[string]string `json:"resources"`
}

type sourceGPU struct {
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
	Count        int64  `json:"count"`
	MemoryMiB    int64  `json:"memoryMiB"`
}

type sourceAccel struct {
	Name         string `json:"name"`
	Manufacturer string `json:"manufacturer"`
	Count        int64  `json:"count"`
}

type sourceVPCLimits struct {
	MaxENIs                 int64               `json:"maxENIs"`
	IPv4PerENI              int64               `json:"ipv4PerENI"`
	TrunkingCompatible      bool                `json:"trunkingCompatible"`
	BranchENIs              int64               `json:"branchENIs"`
	DefaultNetworkCardIndex int64               `json:"defaultNetworkCardIndex"`
	NetworkCards            []sourceNetworkCard `json:"networkCards"`
	Hypervisor              string              `json:"hypervisor"`
	IsBareMetal             bool                `json:"isBareMetal"`
}

type sourceNetworkCard struct {
	Index   int64 `json:"index"`
	MaxENIs int64 `json:"maxENIs"`
}

// sourceFields lists the JSON keys of sourceType and whether each may be null.
func sourceFields() map[string]bool {
	fields := map[string]bool{}
	t := reflect.TypeFor[sourceType]()
	for i := range t.NumField() {
		f := t.Field(i)
		fields[f.Tag.Get("json")] = f.Tag.Get("nullable") == "true"
	}
	return fields
}

// decodeInstanceTypes parses instance-types.json strictly: every entry must
// have exactly the known fields, null only where the README allows it.
func decodeInstanceTypes(b []byte) ([]sourceType, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, errors.New("no instance types")
	}
	fields := sourceFields()
	types := make([]sourceType, 0, len(raw))
	var errs []error
	for i, r := range raw {
		t, err := decodeInstanceType(r, fields)
		if err != nil {
			// The index locates entries whose name could not be read.
			errs = append(errs, fmt.Errorf("entry %d: %w", i, err))
			continue
		}
		types = append(types, t)
	}
	return types, errors.Join(errs...)
}

func decodeInstanceType(r json.RawMessage, fields map[string]bool) (sourceType, error) {
	var t sourceType
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r, &keys); err != nil {
		return t, err
	}
	var name string
	if err := json.Unmarshal(keys["name"], &name); err != nil || name == "" {
		return t, errors.New("field name: missing or not a non-empty string")
	}
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		nullable, known := fields[k]
		switch {
		case !known:
			errs = append(errs, fmt.Errorf("%s: unknown field %s", name, k))
		case !nullable && string(keys[k]) == "null":
			errs = append(errs, fmt.Errorf("%s: field %s: must not be null", name, k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if _, ok := keys[k]; !ok {
			errs = append(errs, fmt.Errorf("%s: field %s: missing", name, k))
		}
	}
	if len(errs) > 0 {
		return t, errors.Join(errs...)
	}
	dec := json.NewDecoder(bytes.NewReader(r))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return t, fmt.Errorf("%s: %w", name, err)
	}
	return t, nil
}

// decodePrices returns the on-demand prices of region from pricing-on-demand.json.
func decodePrices(b []byte, region string) (map[string]float64, error) {
	var all map[string]map[string]float64
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	prices, ok := all[region]
	if !ok {
		return nil, fmt.Errorf("region %s: missing", region)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(prices)) {
		if p := prices[name]; !(p > 0) {
			errs = append(errs, fmt.Errorf("region %s, %s: price must be > 0, got %v", region, name, p))
		}
		if strings.TrimSpace(name) == "" {
			errs = append(errs, fmt.Errorf("region %s: empty instance type name", region))
		}
	}
	return prices, errors.Join(errs...)
}
