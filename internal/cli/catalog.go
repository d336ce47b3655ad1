package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/excloud/k8sapi/internal/apitypes"
)

// catalogLists are `get images`, `get instance-types` and `get subnets`:
// each one list of GET /catalog (the compute API's, read by k8sapi with
// the operator's token: this CLI knows only k8sapi's address), as a table.
var catalogLists = []struct {
	use, short, key string
	table           func(apitypes.Catalog) ([]string, [][]string)
}{
	{"images", "List the VM images a cluster file's image_id may name", "images", imageRows},
	{"instance-types", "List the VM sizes a cluster file's instance_type may name", "instance_types", instanceTypeRows},
	{"subnets", "List the subnets a cluster file's subnet_id may name", "subnets", subnetRows},
}

func (a *app) catalogCommands() []*cobra.Command {
	var cmds []*cobra.Command
	for _, l := range catalogLists {
		var o output
		cmd := &cobra.Command{Use: l.use, Short: l.short, Args: cobra.NoArgs,
			RunE: a.run(func(ctx context.Context, _ *cobra.Command, _ []string) error {
				cat, raw, err := a.catalog(ctx)
				if err != nil {
					return err
				}
				if o.structured() {
					doc, _ := json.Marshal(map[string]json.RawMessage{l.key: raw[l.key]})
					return o.printDocument(a.stdout, doc)
				}
				headers, rows := l.table(cat)
				t := newTable(a.stdout, headers...)
				for _, r := range rows {
					t.row(r...)
				}
				return t.flush()
			})}
		addOutputFlag(cmd, &o, outputJSON, outputYAML)
		cmds = append(cmds, cmd)
	}
	return cmds
}

// catalog reads GET /catalog, decoded and as its raw lists.
func (a *app) catalog(ctx context.Context) (apitypes.Catalog, map[string]json.RawMessage, error) {
	c, err := a.client()
	if err != nil {
		return apitypes.Catalog{}, nil, err
	}
	var cat apitypes.Catalog
	res, err := c.getJSON(ctx, "/catalog", &cat)
	if err != nil {
		return cat, nil, err
	}
	var raw map[string]json.RawMessage
	return cat, raw, json.Unmarshal(res.Body, &raw)
}

func imageRows(c apitypes.Catalog) ([]string, [][]string) {
	rows := make([][]string, len(c.Images))
	for i, img := range c.Images {
		rows[i] = []string{strconv.FormatInt(img.ID, 10), img.Name}
	}
	return []string{"ID", "NAME"}, rows
}

func instanceTypeRows(c apitypes.Catalog) ([]string, [][]string) {
	rows := make([][]string, len(c.InstanceTypes))
	for i, t := range c.InstanceTypes {
		rows[i] = []string{t.Name, strconv.Itoa(t.VCPUs), fmt.Sprintf("%d MiB", t.MemoryMiB)}
	}
	return []string{"NAME", "VCPUS", "MEMORY"}, rows
}

func subnetRows(c apitypes.Catalog) ([]string, [][]string) {
	rows := make([][]string, len(c.Subnets))
	for i, s := range c.Subnets {
		rows[i] = []string{strconv.FormatInt(s.ID, 10), strconv.FormatInt(s.ZoneID, 10), s.CIDRv4, orNone(s.CIDRv6)}
	}
	return []string{"ID", "ZONE", "IPV4", "IPV6"}, rows
}
