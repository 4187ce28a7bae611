// SVG plots of a replay: reserved and in-use bytes over the trace, one panel
// per allocator, side by side on one scale, so fragmentation can be judged
// by eye. Header-only, no dependency: the SVG is written as text.
//
// Each series is sampled at every event and reduced to at most `columns`
// points per panel, keeping each column's maximum, so no peak is lost.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace taintpool::replay {

/// One allocator's replay: bytes reserved and in use after each event.
struct Timeline {
  std::string allocator;
  std::vector<std::uint64_t> reserved;
  std::vector<std::uint64_t> in_use;
  std::string note; ///< Shown under the panel title (e.g. "1.012x, 12 storage calls").
};

namespace plot_detail {

inline std::vector<std::uint64_t> column_max(const std::vector<std::uint64_t>& series,
                                             std::size_t columns) {
  std::vector<std::uint64_t> out(std::min(columns, series.size()), 0);
  if (out.empty()) {
    return out;
  }
  for (std::size_t at = 0; at < series.size(); ++at) {
    const std::size_t column = at * out.size() / series.size();
    out[column] = std::max(out[column], series[at]);
  }
  return out;
}

inline std::string number(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

inline std::string escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '&':
      out += "&amp;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace plot_detail

/// Writes the plot of `timelines` (one panel each) to `path`. Throws
/// std::runtime_error when the file cannot be written.
inline void write_svg(const std::string& path, const std::string& title,
                      const std::vector<Timeline>& timelines) {
  using plot_detail::number;
  constexpr int panel_width = 360;
  constexpr int panel_height = 220;
  constexpr int margin_left = 52;
  constexpr int margin_top = 56;
  constexpr int gap = 24;
  constexpr std::size_t columns = 360;
  const int width = margin_left + static_cast<int>(timelines.size()) * (panel_width + gap) + 8;
  const int height = margin_top + panel_height + 48;

  std::uint64_t top = 1;
  for (const Timeline& line : timelines) {
    for (const std::uint64_t value : line.reserved) {
      top = std::max(top, value);
    }
    for (const std::uint64_t value : line.in_use) {
      top = std::max(top, value);
    }
  }
  const double gib = 1024.0 * 1024.0 * 1024.0;
  const double top_gib = static_cast<double>(top) / gib;
  // A round tick step — 1, 2 or 5 times a power of ten — giving at most 6 ticks.
  double step = 1e-3;
  for (int at = 0; top_gib / step > 6 && at < 60; ++at) {
    const int mantissa = at % 3;
    step = (mantissa == 0 ? 2.0 : mantissa == 1 ? 5.0 : 10.0) * std::pow(10.0, at / 3 - 3);
  }
  const double scale_top = step * (static_cast<int>(top_gib / step) + 1);

  std::string svg;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(height) +
         "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"bold\">" +
         plot_detail::escape(title) + "</text>\n";
  svg += "<text x=\"8\" y=\"34\" fill=\"#555\">bytes over the trace's events: "
         "<tspan fill=\"#d62728\">reserved (line)</tspan>, "
         "<tspan fill=\"#1f77b4\">in use (filled)</tspan>; GiB</text>\n";
  for (std::size_t index = 0; index < timelines.size(); ++index) {
    const Timeline& line = timelines[index];
    const int x0 = margin_left + static_cast<int>(index) * (panel_width + gap);
    const int y0 = margin_top;
    auto y_of = [&](std::uint64_t value) {
      return y0 + panel_height -
             static_cast<double>(value) / gib / scale_top * static_cast<double>(panel_height);
    };
    svg += "<text x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0 - 14) +
           "\" font-weight=\"bold\">" + plot_detail::escape(line.allocator) + "</text>\n";
    svg += "<text x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0 - 3) +
           "\" fill=\"#555\">" + plot_detail::escape(line.note) + "</text>\n";
    svg += "<rect x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0) + "\" width=\"" +
           std::to_string(panel_width) + "\" height=\"" + std::to_string(panel_height) +
           "\" fill=\"none\" stroke=\"#999\"/>\n";
    for (double tick = 0; tick <= scale_top + 1e-9; tick += step) {
      const double y = y0 + panel_height - tick / scale_top * panel_height;
      svg += "<line x1=\"" + std::to_string(x0) + "\" x2=\"" + std::to_string(x0 + panel_width) +
             "\" y1=\"" + number(y, 1) + "\" y2=\"" + number(y, 1) + "\" stroke=\"#eee\"/>\n";
      if (index == 0) {
        svg += "<text x=\"" + std::to_string(x0 - 4) + "\" y=\"" + number(y + 4, 1) +
               "\" text-anchor=\"end\">" + number(tick, step < 0.1 ? 2 : 1) + "</text>\n";
      }
    }
    const auto reserved = plot_detail::column_max(line.reserved, columns);
    const auto in_use = plot_detail::column_max(line.in_use, columns);
    auto x_of = [&](std::size_t at, std::size_t count) {
      return x0 + static_cast<double>(at) / static_cast<double>(std::max<std::size_t>(count, 1)) *
                      panel_width;
    };
    if (!in_use.empty()) {
      std::string area = "M" + number(x_of(0, in_use.size()), 1) + "," + number(y_of(0), 1);
      for (std::size_t at = 0; at < in_use.size(); ++at) {
        area += " L" + number(x_of(at, in_use.size()), 1) + "," + number(y_of(in_use[at]), 1);
        area += " L" + number(x_of(at + 1, in_use.size()), 1) + "," + number(y_of(in_use[at]), 1);
      }
      area +=
          " L" + number(x_of(in_use.size(), in_use.size()), 1) + "," + number(y_of(0), 1) + " Z";
      svg += "<path d=\"" + area + "\" fill=\"#1f77b4\" fill-opacity=\"0.45\" stroke=\"none\"/>\n";
    }
    if (!reserved.empty()) {
      std::string path_data;
      for (std::size_t at = 0; at < reserved.size(); ++at) {
        path_data += (at == 0 ? "M" : " L") + number(x_of(at, reserved.size()), 1) + "," +
                     number(y_of(reserved[at]), 1);
        path_data +=
            " L" + number(x_of(at + 1, reserved.size()), 1) + "," + number(y_of(reserved[at]), 1);
      }
      svg +=
          "<path d=\"" + path_data + "\" fill=\"none\" stroke=\"#d62728\" stroke-width=\"1.5\"/>\n";
    }
    svg += "<text x=\"" + std::to_string(x0 + panel_width / 2) + "\" y=\"" +
           std::to_string(y0 + panel_height + 16) +
           "\" text-anchor=\"middle\" fill=\"#555\">event " + "(" +
           std::to_string(line.in_use.size()) + ")</text>\n";
  }
  svg += "</svg>\n";
  std::ofstream out(path);
  out << svg;
  if (!out) {
    throw std::runtime_error("cannot write " + path);
  }
}

} // namespace taintpool::replay
