// Appendix A's figure: the four runs of 004 In [51]'s cell after torch.manual_seed(123) on the
// portable backend, the fourth being the mask notebook 004 printed: runs 1 to 3 as the chapter
// printed them, run 4 as it recorded it with the block that compares it with the notebook.
#include "figures.hpp"

#include <string>
#include <vector>

namespace {

FIGURES{{
    .chapter = "A", .step = "fourth", .file = "chA_history_runs.svg",
    .caption = "Appendix A, step 3: torch.manual_seed(123), then nn.Dropout(0.5) of chapter 4's causal "
               "weights four times on the portable backend. Each run draws another mask; the fourth is "
               "the one notebook 004 In [51] printed.",
    .draw = [](const figures::Data& data) {
        std::vector<attn::Tensor> runs;
        for (const char* run : {"run 1", "run 2", "run 3"}) {
            const std::string label = std::string("[portable backend] ") + run + " of In [51]'s cell, ";
            for (const auto& b : data.record->blocks)
                if (b.label.rfind(label, 0) == 0) runs.push_back(data.printed(b.label, {6, 6}, 1));  // after the -inf of its label
        }
        runs.push_back(data.tensor("004 In [51]'s printed mask against each backend (fourth call, below the diagonal)",
                                   "runs[3]"));
        if (runs.size() != 4) throw std::runtime_error("appendix A printed " + std::to_string(runs.size() - 1) + " of 3 runs");
        auto style = figures::token_style("The cell run four times after one seed (portable backend)");
        style.vmax = 2.0;
        style.precision = 1;
        style.panels_per_row = 2;
        return figures::svg::heatmaps(runs, {"run 1", "run 2", "run 3", "run 4 = 004 In [51]"}, style);
    }}};

}  // namespace
