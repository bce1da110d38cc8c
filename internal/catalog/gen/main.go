// Command gen turns the EC2 facts and prices in hack/data/ec2 into the compact,
// deterministic catalog file that package catalog embeds. It is run by
// `go generate ./internal/catalog/...`; its output is committed, and a test
// regenerates it to catch a stale copy.
//
// It fails, naming the instance type and field, on any input it does not
// understand, so that a refresh of the source data cannot slip garbage into the
// catalog.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
)

const (
	// instanceTypesFile and pricingFile are the inputs, inside the data directory.
	instanceTypesFile = "instance-types.json"
	pricingFile       = "pricing-on-demand.json"
	// priceRegion is the region whose static on-demand prices the catalog carries.
	priceRegion = "us-east-1"
	// generatedBy marks the output as generated.
	generatedBy = "internal/catalog/gen from hack/data/ec2; DO NOT EDIT"
)

func main() {
	data := flag.String("data", "../../hack/data/ec2", "directory holding "+instanceTypesFile+" and "+pricingFile)
	out := flag.String("out", "zz_generated.catalog.json", "file to write")
	flag.Parse()
	if err := run(*data, *out); err != nil {
		fmt.Fprintf(os.Stderr, "catalog gen: %v\n", err)
		os.Exit(1)
	}
}

// run reads the data directory and writes the catalog file.
func run(dataDir, out string) error {
	types, err := os.ReadFile(filepath.Join(dataDir, instanceTypesFile))
	if err != nil {
		return fmt.Errorf("reading instance types: %w", err)
	}
	prices, err := os.ReadFile(filepath.Join(dataDir, pricingFile))
	if err != nil {
		return fmt.Errorf("reading prices: %w", err)
	}
	b, err := generate(types, prices)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("writing catalog: %w", err)
	}
	return nil
}

// generate converts the two source documents into the catalog file's bytes.
// The output depends only on the input: types are sorted by name, object keys
// come out in a fixed order and one type sits on each line so diffs stay small.
func generate(typesJSON, pricesJSON []byte) ([]byte, error) {
	src, err := decodeInstanceTypes(typesJSON)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", instanceTypesFile, err)
	}
	prices, err := decodePrices(pricesJSON, priceRegion)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", pricingFile, err)
	}
	records, err := convert(src, prices)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", instanceTypesFile, err)
	}
	return encode(schema.File{GeneratedBy: generatedBy, PriceRegion: priceRegion, InstanceTypes: records})
}

// encode writes f as JSON with one instance type per line.
func encode(f schema.File) ([]byte, error) {
	var buf bytes.Buffer
	generatedBy, err := json.Marshal(f.GeneratedBy)
	if err != nil {
		return nil, fmt.Errorf("encoding generatedBy: %w", err)
	}
	region, err := json.Marshal(f.PriceRegion)
	if err != nil {
		return nil, fmt.Errorf("encoding priceRegion: %w", err)
	}
	fmt.Fprintf(&buf, `{"generatedBy":%s,"priceRegion":%s,"instanceTypes":[`, generatedBy, region)
	for i, t := range f.InstanceTypes {
		line, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", t.Name, err)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
		buf.Write(line)
	}
	buf.WriteString("\n]}\n")
	return buf.Bytes(), nil
}
