package replay

import (
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"strings"
)

//go:embed assets/chart.umd.min.js assets/report.js assets/report.html.tmpl
var assets embed.FS

var reportTemplate = template.Must(template.New("report.html.tmpl").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.1f", 100*f) },
}).ParseFS(assets, "assets/report.html.tmpl"))

// htmlRow is one summary line of the HTML report.
type htmlRow struct {
	Name, Unit     string
	Values, Deltas []string
}

// WriteHTML writes one self-contained HTML page: summary and worker tables
// and charts drawn by the embedded Chart.js from the embedded reports. It
// loads nothing from the network.
func WriteHTML(w io.Writer, reports []*Report) error {
	data, err := json.Marshal(reports)
	if err != nil {
		return fmt.Errorf("encode report data: %w", err)
	}
	chartJS, err := assets.ReadFile("assets/chart.umd.min.js")
	if err != nil {
		return err
	}
	reportJS, err := assets.ReadFile("assets/report.js")
	if err != nil {
		return err
	}
	var labels, deltaLabels []string
	for i, r := range reports {
		labels = append(labels, r.Label)
		if i > 0 {
			deltaLabels = append(deltaLabels, "Δ "+r.Label+" vs "+reports[0].Label)
		}
	}
	var rows []htmlRow
	for _, m := range tableRows() {
		row := htmlRow{Name: m.name, Unit: m.unit}
		base := m.value(reports[0])
		for i, r := range reports {
			row.Values = append(row.Values, formatValue(m.value(r)))
			if i > 0 {
				row.Deltas = append(row.Deltas, delta(base, m.value(r)))
			}
		}
		rows = append(rows, row)
	}
	return reportTemplate.Execute(w, map[string]any{
		"Title":       strings.Join(labels, " vs "),
		"Labels":      labels,
		"DeltaLabels": deltaLabels,
		"Compare":     len(reports) > 1,
		"Rows":        rows,
		"KeyRows":     keyRows(rows),
		"Reports":     reports,
		// The JSON is safe inside a script element: encoding/json escapes
		// <, > and &; the scripts are our own files.
		"Data":     template.JS(data),
		"ChartJS":  template.JS(chartJS),
		"ReportJS": template.JS(reportJS),
	})
}
