// [SECTION] Chat panel: streaming replies with the model's chat template; sampling controls; the
// adapter on or off; side by side, the base model and the adapter answering the same prompt; copy a
// message; clear the conversation.
#include <cfloat>
#include <string>

#include <imgui.h>
#include <imgui_stdlib.h>

#include "ui/glyphs.h"
#include "ui/panels.h"
#include "ui/widgets.h"

namespace ls::ui {

namespace {

// The adapters of the runs trained on the loaded model (another base's adapter does not fit its layers).
void adapter_combo(const ChatView& chat, const RunsView& runs, const ModelView& model, PanelIo& io) {
  const std::string current = chat.adapter.empty() ? "no adapter (base model)" : chat.adapter_label;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 15);
  if (ImGui::BeginCombo("##adapter", current.c_str())) {
    if (ImGui::Selectable("no adapter (base model)", chat.adapter.empty())) io.send(cmd::UseAdapter{});
    for (const auto& r : runs.runs) {
      if (r.out_dir.empty() || (model.loaded && !trained_on(r, model.loaded->model.dir))) continue;
      if (r.status == store::RunStatus::finished || r.status == store::RunStatus::stopped) {
        const auto dir = r.out_dir / "adapter";
        const std::string label = r.name + " (final)";
        if (ImGui::Selectable(label.c_str(), chat.adapter == dir)) io.send(cmd::UseAdapter{dir, label});
      }
      if (auto it = runs.checkpoints.find(r.id); it != runs.checkpoints.end())
        for (const auto& c : it->second) {
          const std::string label = r.name + " checkpoint-" + std::to_string(c.step);
          if (ImGui::Selectable(label.c_str(), chat.adapter == c.path)) io.send(cmd::UseAdapter{c.path, label});
        }
    }
    ImGui::EndCombo();
  }
  io.tag("chat.adapter");
  tooltip("The LoRA adapter the tuned side uses: a run's final adapter or one of its checkpoints (runs of the "
          "loaded model only).");
}

// The stored chats, newest first: one chosen is shown again, and the next messages go on in it.
void history_combo(const ChatView& chat, PanelIo& io) {
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7);
  if (ImGui::BeginCombo("##history", "History", ImGuiComboFlags_HeightLarge)) {
    if (chat.history.empty()) ImGui::TextColored(kDim, "No chats yet.");
    for (size_t i = 0; i < chat.history.size(); ++i) {
      const store::ChatInfo& c = chat.history[i];
      const std::string label = format_local_time(c.created_at) + "  " + c.title +
                                (c.adapter_path ? "  [" + c.adapter_path->parent_path().filename().string() + "]" : "") +
                                "##" + std::to_string(c.id);
      note_glyphs(label);
      if (ImGui::Selectable(label.c_str(), chat.chat_id == c.id)) io.send(cmd::OpenChat{c.id});
      io.tag("chat.history." + std::to_string(i));
    }
    ImGui::EndCombo();
  }
  io.tag("chat.history");
  tooltip("Earlier chats, newest first, with the adapter's run in brackets: one chosen is shown again, and new "
          "messages are added to it.");
}

void draw_sampling(ChatSettings& st, PanelIo& io) {
  if (!ImGui::BeginTable("sampling", 4, ImGuiTableFlags_SizingStretchSame)) return;
  auto cell = [](const char* label) {
    ImGui::TableNextColumn();
    ImGui::TextColored(kDim, "%s", label);
    ImGui::SetNextItemWidth(-FLT_MIN);
  };
  cell("temperature");
  ImGui::SliderFloat("##temperature", &st.sampling.temperature, 0.0f, 2.0f, "%.2f");
  tooltip("0 is greedy: always the most likely token.");
  io.tag("chat.temperature");
  cell("top-p");
  ImGui::SliderFloat("##top_p", &st.sampling.top_p, 0.05f, 1.0f, "%.2f");
  tooltip("Nucleus sampling: the smallest set of tokens whose probability reaches top-p (1: off).");
  cell("top-k");
  int k = int(st.sampling.top_k);
  if (ImGui::SliderInt("##top_k", &k, 0, 200)) st.sampling.top_k = uint32_t(k);
  tooltip("Keep the k most likely tokens (0: off).");
  cell("max tokens");
  int m = int(st.max_tokens);
  if (ImGui::SliderInt("##max_tokens", &m, 1, 2048)) st.max_tokens = uint32_t(m);
  cell("min-p");
  ImGui::SliderFloat("##min_p", &st.sampling.min_p, 0.0f, 0.5f, "%.2f");
  tooltip("Drop tokens below min-p times the top token's probability (0: off).");
  cell("repetition penalty");
  ImGui::SliderFloat("##rep", &st.sampling.repetition_penalty, 1.0f, 2.0f, "%.2f");
  tooltip("Hugging Face's repetition penalty (1: off).");
  cell("seed");
  int seed = int(st.sampling.seed);
  if (ImGui::InputInt("##seed", &seed) && seed >= 0) st.sampling.seed = uint64_t(seed);
  cell("system message");
  note_glyphs(st.system);
  ImGui::InputTextWithHint("##system", "(the template's own)", &st.system);
  ImGui::EndTable();
}

void draw_reply(const ChatReply& r, const char* id) {
  ImGui::PushID(id);
  note_glyphs(r.text);
  note_glyphs(r.answered_by);
  ImGui::TextColored(kAccent, "%s", r.answered_by.c_str());
  ImGui::SameLine();
  if (ImGui::SmallButton("copy")) ImGui::SetClipboardText(r.text.c_str());
  if (!r.error.empty()) ImGui::TextColored(kBad, "%s", r.error.c_str());
  ImGui::TextWrapped("%s%s", r.text.c_str(), r.streaming ? " _" : "");
  if (!r.stats.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kDim);
    ImGui::TextWrapped("%s", r.stats.c_str());
    ImGui::PopStyleColor();
  }
  ImGui::PopID();
}

}  // namespace

void draw_chat_panel(PanelContext& ctx, const char* title, bool* p_open) {
  const ChatView& chat = ctx.chat;
  ChatSettings& st = ctx.chat_settings;
  const ModelView& model = ctx.model;
  const RunsView& runs = ctx.runs;
  ChatPanelState& s = ctx.state.chat;
  PanelIo& io = ctx.io;
  if (!ImGui::Begin(title, p_open)) {
    ImGui::End();
    return;
  }
  adapter_combo(chat, runs, model, io);
  same_line_if_fits(checkbox_width("adapter on"));
  const bool none = chat.adapter.empty();
  bool off = false;  // what the checkboxes show without an adapter
  ImGui::BeginDisabled(none);
  ImGui::Checkbox("adapter on", none ? &off : &st.use_adapter);
  io.tag("chat.use_adapter");
  same_line_if_fits(checkbox_width("side by side"));
  ImGui::Checkbox("side by side", none ? &off : &st.side_by_side);
  io.tag("chat.side_by_side");
  tooltip("Answer each message twice: with the base model and with the adapter.");
  ImGui::EndDisabled();
  same_line_if_fits(button_width("Clear"));
  if (ImGui::Button("Clear")) io.send(cmd::ClearChat{});
  io.tag("chat.clear");
  same_line_if_fits(ImGui::GetFontSize() * 7);
  history_combo(chat, io);
  const bool sampling = ImGui::CollapsingHeader("Sampling");
  io.tag("chat.sampling");
  if (sampling) draw_sampling(st, io);

  const float input_h = ImGui::GetFrameHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
  if (ImGui::BeginChild("conversation", {0, -input_h}, true)) {
    if (chat.turns.empty())
      ImGui::TextColored(kDim, model.loaded ? "Say something to the model." : "Open a model to chat with it.");
    for (size_t t = 0; t < chat.turns.size(); ++t) {
      const ChatTurn& turn = chat.turns[t];
      ImGui::PushID(int(t));
      ImGui::TextColored(kWarn, "you");
      note_glyphs(turn.user);
      ImGui::TextWrapped("%s", turn.user.c_str());
      const bool both = turn.reply[kBase].wanted && turn.reply[kTuned].wanted;
      if (both && ImGui::BeginTable("sides", 2, ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchSame)) {
        ImGui::TableNextColumn();
        draw_reply(turn.reply[kBase], "base");
        ImGui::TableNextColumn();
        draw_reply(turn.reply[kTuned], "tuned");
        ImGui::EndTable();
      } else {
        for (int side : {kBase, kTuned})
          if (turn.reply[side].wanted)
            draw_reply(turn.reply[side], side ? "tuned" : "base");
      }
      ImGui::Separator();
      ImGui::PopID();
    }
    if (chat.turns.size() != s.seen_turns || chat.generating) {
      if (ImGui::GetScrollY() >= ImGui::GetScrollMaxY() - ImGui::GetFontSize() * 4 || chat.turns.size() != s.seen_turns)
        ImGui::SetScrollHereY(1.0f);
      s.seen_turns = chat.turns.size();
    }
  }
  ImGui::EndChild();

  const float button_w = ImGui::GetFontSize() * 5;
  ImGui::SetNextItemWidth(-button_w - ImGui::GetStyle().ItemSpacing.x);
  note_glyphs(s.input);  // what is being typed (an input method's CJK) shows as it is typed
  bool send = ImGui::InputTextWithHint("##input", "message (Enter sends)", &s.input, ImGuiInputTextFlags_EnterReturnsTrue);
  io.tag("chat.input");
  if (send) ImGui::SetKeyboardFocusHere(-1);  // keep typing after sending
  ImGui::SameLine();
  if (chat.generating) {
    if (ImGui::Button("Stop", {button_w, 0})) io.send(cmd::StopChat{});
    io.tag("chat.stop");
  } else {
    ImGui::BeginDisabled(!model.loaded);
    send |= ImGui::Button("Send", {button_w, 0});
    io.tag("chat.send");
    ImGui::EndDisabled();
  }
  if (send && !chat.generating && model.loaded && !s.input.empty()) {
    io.send(cmd::SendChat{s.input});
    s.input.clear();
  }
  ImGui::End();
}

}  // namespace ls::ui
