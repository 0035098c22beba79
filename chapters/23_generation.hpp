// Chapter 23's helper: the line that puts this run's generation rate beside the bound of the
// reader's own machine and the recorded benchmark's rate (on a terminal only: the output's
// bytes must not depend on the machine). Compiled with the chapter, in the chapters' unity file
// (chapters/meson.build): everything here is in namespace ch23.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

#include "attn/model/gpt_model.hpp"
#include "textbook/machine.hpp"

namespace ch23 {

/// "This run, on <cpu> (2 threads): 200 tokens in 8.1 s, 24.7 tokens/s; its bound, measured
/// now: ... ; recorded in the table above on <cpu>: ...". A decode step reads every weight but
/// the embeddings' rows it does not use (tok_emb and pos_emb: one row each), and the cache,
/// which grows from the prompt's few tokens to `cache_bytes_end` over the run (half of it
/// counted: its mean).
inline std::string this_run_note(attn::GPTModel& model, std::size_t tokens, double seconds, std::size_t cache_bytes_end) {
    double weight_bytes = 0.0;
    for (const auto& p : model.named_parameters())
        if (p.name != "tok_emb.weight" && p.name != "pos_emb.weight") weight_bytes += 4.0 * double(p.value->size());
    const double step_bytes = weight_bytes + 0.5 * double(cache_bytes_end);
    const unsigned threads = textbook::machine_threads();
    const double read = textbook::read_bytes_per_second(threads);
    const double rate = double(tokens) / seconds, bound = read / step_bytes;
    char line[640];
    std::snprintf(line, sizeof line,
                  "This run, on %s (%s): %zu tokens in %.1f s, %.1f tokens/s. Its bound, measured now: a decode "
                  "step reads %.0f MB of weights and cache; reading memory at %.1f GB/s (%s) that is %.1f tokens/s, "
                  "of which this run reached %.0f %%.",
                  textbook::cpu_model().c_str(), textbook::threads_text(threads).c_str(), tokens, seconds, rate,
                  step_bytes / 1e6, read / 1e9, textbook::threads_text(threads).c_str(), bound, 100.0 * rate / bound);
    std::string note = line;
    if (const auto rec = textbook::recorded_summary("generation", "generate", threads, "tokens_per_s")) {
        std::snprintf(line, sizeof line, " Recorded in the table above on %s (%s, commit %s): %.1f tokens/s.",
                      rec->cpu.c_str(), textbook::threads_text(rec->threads).c_str(), rec->commit.c_str(), rec->value);
        note += line;
    }
    return note;
}

}  // namespace ch23
