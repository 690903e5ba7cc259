// Studio: the workers' events applied to the views, on the UI thread, once per frame (ui/studio.cpp).
#include <cstdio>

#include "ui/overloaded.h"
#include "ui/studio.h"
#include "ui/widgets.h"

namespace ls::ui {

void Studio::apply(Event& event) {
  std::visit(
      Overloaded{
          [&](ev::ModelLoaded& e) {
            model_.loading = false;
            if (data_.loaded && data_.model_dir != e.model->model.dir) data_wanted_ = data_.path;  // recount
            const bool other_model = model_.loaded && model_.loaded->model.dir != e.model->model.dir;
            model_.loaded = std::move(e.model);
            fit_targets(train_settings_, model_.loaded->model.config);
            chat_worker_->reset(true);
            // Another model: the conversation was with the one before, and an adapter of a run trained on another
            // base does not fit this one's layers.
            if (other_model) {
              Command clear = cmd::ClearChat{};
              run(clear);
            }
            if (const store::RunInfo* r = runs_.owner_of(chat_.adapter);
                !chat_.adapter.empty() && r && !trained_on(*r, model_.loaded->model.dir)) {
              chat_.adapter.clear();
              chat_.adapter_label.clear();
            }
            status_ = "Model " + model_.loaded->model.dir.filename().string() + " loaded: " +
                      format_count(model_.loaded->parameters) + " parameters.";
          },
          [&](ev::ModelFailed& e) {
            model_.loading = false;
            fail("The model cannot be opened", e.error);
          },
          [&](ev::DataLoaded& e) {
            data_ = std::move(e.data);
            status_ = "Data " + data_.path.filename().string() + ": " + format_count(data_.examples) + " examples.";
          },
          [&](ev::DataFailed& e) {
            data_.loading = false;
            fail("The data file cannot be read", e.error);
          },
          [&](ev::TrainStep& e) {
            const auto& r = e.report;
            if (train_.state == TrainState::starting) train_.state = TrainState::running;
            if (train_.run_id != r.run_id) runs_.shown = r.run_id;  // a new run: chart it
            train_.run_id = r.run_id;
            train_.step = r.step;
            train_.total = r.total;
            if (r.skipped) {  // no metrics: the chart joins the steps around it, as the run store does
              status_ = "Step " + std::to_string(r.step) + " skipped: " + r.skip_reason + "; its update was not applied.";
              return;
            }
            train_.loss = r.loss;
            train_.lr = r.lr;
            train_.grad_norm = r.grad_norm;
            train_.tokens_per_s = r.tokens_per_s;
            train_.elapsed_s = r.elapsed_s;
            if (r.val_loss) train_.val_loss = r.val_loss;
            train_.checkpoint_asked = false;
            merge_metrics(runs_, r.run_id, {{.step = r.step, .time = store::unix_now(), .loss = r.loss, .val_loss = r.val_loss,
                                      .lr = r.lr, .grad_norm = r.grad_norm, .tokens_per_s = r.tokens_per_s,
                                      .gpu_ms = r.gpu_ms}});
          },
          [&](ev::TrainPaused& e) {
            if (train_.state == TrainState::stopping) return;
            train_.state = e.paused ? TrainState::paused : TrainState::running;
          },
          [&](ev::TrainDone& e) {
            train_.state = e.result.stopped ? TrainState::stopped : TrainState::finished;
            train_.adapter_dir = e.result.adapter_dir;
            train_.run_id = e.result.run_id;
            status_ = std::string(e.result.stopped ? "Training stopped" : "Training finished") + " after " +
                      std::to_string(e.result.steps) + " steps; adapter written to " + e.result.adapter_dir.string();
            if (chat_.adapter.empty() || chat_.adapter == e.result.adapter_dir) {
              chat_.adapter = e.result.adapter_dir;
              chat_.adapter_label = train_.out_dir.filename().string() + " (final)";
              chat_settings_.use_adapter = true;
            }
          },
          [&](ev::TrainFailed& e) {
            train_.state = TrainState::failed;
            train_.error = e.error;
            fail("Training failed", e.error);
          },
          [&](ev::ChatPiece& e) {
            if (e.turn >= chat_.turns.size()) return;
            auto& r = chat_.turns[e.turn].reply[e.side];
            r.text += e.text;
            ++r.tokens;
            ++chat_.tokens_total;
          },
          [&](ev::ChatDone& e) {
            if (e.turn >= chat_.turns.size()) return;
            auto& r = chat_.turns[e.turn].reply[e.side];
            r.streaming = false;
            r.text = e.reply.text;
            char buf[200];
            const auto& st = e.reply.stats;
            std::snprintf(buf, sizeof buf, "%u tokens, %.1f tok/s (prefill %u: %.0f tok/s, first token after %.0f ms), stop: %s%s",
                          st.new_tokens, st.decode_tokens_per_second(), st.prompt_tokens, st.prefill_tokens_per_second(),
                          st.first_token_seconds * 1e3, st.stop_reason.c_str(),
                          e.reply.history_dropped ? " (context full: earlier turns dropped)" : "");
            r.stats = buf;
            const auto& turn = chat_.turns[e.turn];
            const bool both = turn.reply[kBase].wanted && turn.reply[kTuned].wanted;
            const std::string role = both && e.side == kBase ? "assistant (base model)" : "assistant";
            store_worker_->post([this, role, text = e.reply.text] { store_.add_reply(role, text); });
          },
          [&](ev::ChatsListed& e) { chat_.history = std::move(e.chats); },
          [&](ev::ChatOpened& e) { show_chat(e.chat, e.messages); },
          [&](ev::ChatFailed& e) {
            if (e.turn >= chat_.turns.size()) return;
            auto& r = chat_.turns[e.turn].reply[e.side];
            r.streaming = false;
            r.error = e.error == "stopped" ? "" : e.error;
            if (e.error == "stopped") r.stats = "stopped";
          },
          [&](ev::ChatMemory& e) {
            chat_kv_bytes_ = e.kv_bytes;
            chat_lora_bytes_ = e.lora_bytes;
          },
          [&](ev::RunsListed& e) {
            runs_.runs = std::move(e.runs);
            if (!runs_.shown && !runs_.runs.empty()) runs_.shown = runs_.runs.front().id;
          },
          [&](ev::RunMetrics& e) {
            if (e.replace) runs_.metrics[e.run].clear();
            merge_metrics(runs_, e.run, std::move(e.rows));
          },
          [&](ev::RunCheckpoints& e) { runs_.checkpoints[e.run] = std::move(e.checkpoints); },
          [&](ev::DeviceMemory& e) {
            memory_stats_ = e.stats;
            memory_budget_ = e.budget;
          },
          [&](ev::Status& e) { status_ = std::move(e.text); },
          [&](ev::Failure& e) { fail(std::move(e.title), std::move(e.message)); },
          [&](ev::EvalPrompts& e) {
            if (e.run != eval_.run) return;
            eval_.rows = std::move(e.rows);
            eval_.compared = e.compared;
            for (int side : {kBase, kTuned}) eval_.answered[side].assign(eval_.rows.size(), 0);
            eval_.wanted = eval_.rows.size() * (e.compared ? 2 : 1);
          },
          [&](ev::EvalReplied& e) {
            if (e.row >= eval_.rows.size()) return;
            (e.side == kTuned ? eval_.rows[e.row].reply : eval_.rows[e.row].base) = std::move(e.reply);
            eval_.answered[e.side][e.row] = 1;
            ++eval_.replies;
          },
          [&](ev::EvalDone& e) {
            eval_.running = false;
            eval_.saved = std::move(e.saved);
            eval_.summary = std::move(e.summary);
            status_ = "Evaluation of " + eval_.run_name + " written to " + eval_.saved.string();
          },
          [&](ev::EvalFailed& e) {
            eval_.running = false;
            eval_.error = std::move(e.error);
            if (eval_.error == "stopped") {
              status_ = "Evaluation stopped: the replies so far stay in the Evaluate panel (not written).";
              return;
            }
            fail("The evaluation failed", eval_.error);
          },
          [&](ev::DemoReady& e) {
            model_.loading = false;
            use_demo_options(e, train_settings_, chat_settings_);
            demo_.ready(e);
            open_model(e.model_dir);
          },
      },
      event);
  if (!chat_.turns.empty()) {
    const auto& last = chat_.turns.back();
    chat_.generating = last.reply[kBase].streaming || last.reply[kTuned].streaming;
  }
}

}  // namespace ls::ui
