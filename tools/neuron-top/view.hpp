// SPDX-License-Identifier: MIT
// neuron-top's screen: a pure function of a Model and the UI state, so that a
// screen can be rendered to text from a fixed model (see tests/unit/tools).
#pragma once

#include <string>
#include <vector>

#include <ftxui/component/event.hpp>
#include <ftxui/dom/elements.hpp>

#include "model.hpp"

namespace neuron::tools::top {

enum class SortKey { util, memory, pid, command };

const char *sort_name(SortKey k);

struct UiState {
    SortKey sort = SortKey::util;
    int selected = 0;  ///< row of the process list
    bool help = false; ///< the help window is shown
    bool quit = false;
    bool paused = false; ///< no new samples while set
};

/// The process rows in the order the UI shows them.
std::vector<ProcessView> sorted_processes(const Model &m, SortKey key);

ftxui::Element render(const Model &m, const UiState &ui);

/// Applies a key to the UI state; false if the key means nothing here.
bool handle_key(UiState &ui, const ftxui::Event &event, const Model &m);

/// The screen as the terminal would show it, styles included (ANSI escapes).
std::string render_to_string(const Model &m, const UiState &ui, int width, int height);

/// The characters of the screen only, one line per row, trailing blanks
/// removed: what the golden tests compare.
std::string render_to_text(const Model &m, const UiState &ui, int width, int height);

/// HH:MM:SS in local time.
std::string clock_time(int64_t wall_s);

} // namespace neuron::tools::top
