#!/usr/bin/env python3
"""Continues a lorastudio training run under PyTorch, on one GPU or on all of them.

Written by `lorastudio export --trl DIR`, with the run's values in trl_config.json beside it:

    python3 train_trl.py                        # one GPU (or the CPU)
    accelerate launch train_trl.py              # every GPU of this machine, data parallel
    accelerate launch --num_processes 4 train_trl.py --same-global-batch

With TRL installed it trains with TRL's SFTTrainer and a PEFT LoraConfig; without TRL, with
transformers' Trainer on the same PEFT model, data and hyperparameters (--no-trl picks that path too).
Needs torch, transformers and peft; trl and datasets for the SFTTrainer; accelerate for several GPUs.

The data are the run's JSONL files read by lorastudio's rules, so the loss falls on the same tokens:
  {"text": ...}                          every token trained (the tokenizer's BOS, if any, and EOS added)
  {"prompt": ..., "completion": ...}     the completion and EOS trained, the prompt not
  {"messages": [{"role", "content"}]}    the chat template applied; assistant turns trained
(everything with train_on_prompt). Examples are cut to max_seq_len; packing appends whole examples to a
row while it fits. Each example is tokenized here and handed to the trainer as input_ids + labels (-100
where the loss does not count), which works with templates that have no {% generation %} markers (Qwen's).

What is not reproduced bit for bit: the LoRA initialisation (torch's generator, not lorastudio's; start
from the run's adapter with --init-adapter to continue it instead), the data order (torch's sampler) and
how the loss is averaged over a step's micro-batches. The adapter is written to OUTPUT_DIR/adapter in
PEFT's format, which `lorastudio chat --adapter` and `PeftModel.from_pretrained` both load.
"""
import argparse
import dataclasses
import inspect
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=os.path.join(HERE, "trl_config.json"), help="the exported config")
    p.add_argument("--model", help="base model: a folder or a Hugging Face hub id (default: the run's)")
    p.add_argument("--data", help="training JSONL (default: the run's)")
    p.add_argument("--val-data", help="validation JSONL (default: the run's, if any)")
    p.add_argument("--output-dir", help="checkpoints and adapter/ (default: the config's, beside it)")
    p.add_argument("--init-adapter", help="start from this PEFT adapter folder instead of a fresh LoRA")
    p.add_argument("--max-steps", type=int, help="optimizer steps (default: the run's)")
    p.add_argument("--epochs", type=float, help="passes over the data when there is no step count")
    p.add_argument("--dtype", default="auto", choices=["auto", "bf16", "f16", "f32"],
                   help="base weights and autocast: auto is bf16 on a GPU that has it, else f32")
    p.add_argument("--same-global-batch", action="store_true",
                   help="with N processes, divide gradient accumulation by N so that a step sees as many "
                        "sequences as the lorastudio run's (when it divides evenly)")
    p.add_argument("--skip-bad-lines", action="store_true", help="report and skip malformed JSONL lines")
    p.add_argument("--no-trl", action="store_true", help="use transformers' Trainer even where TRL is installed")
    return p.parse_args()


def say(*parts):
    """Prints on the main process only (accelerate starts one process per GPU)."""
    if int(os.environ.get("RANK", "0")) == 0:
        print("train_trl:", *parts, flush=True)


def fail(message):
    sys.exit("train_trl: " + message)


def resolve(path, base):
    """Paths in the config are absolute, or relative to the config's folder."""
    if not path:
        return None
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base, path))


# [SECTION] JSONL records, checked as lorastudio checks them (engine/train/jsonl.cpp)

class BadLine(Exception):
    pass


def read_records(path):
    """Yields (line number, record or BadLine) for every non-blank line."""
    try:
        f = open(path, "r", encoding="utf-8-sig", newline="")
    except OSError as e:
        fail(f"{path}: cannot open ({e.strerror})")
    with f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                continue
            try:
                yield number, parse_record(line)
            except BadLine as e:
                yield number, e


def type_name(value):
    """JSON's name for a value's type, as lorastudio's messages say it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", int: "number", float: "number"}[type(value)]


def parse_record(line):
    try:
        j = json.loads(line)
    except json.JSONDecodeError as e:
        raise BadLine(f"not valid JSON: {e}")
    if not isinstance(j, dict):
        raise BadLine(f"expected a JSON object, got {type_name(j)}")
    formats = ("text" in j) + ("messages" in j) + ("prompt" in j or "completion" in j)
    if formats == 0:
        raise BadLine('no "text", "prompt"/"completion" or "messages" key (one of the three formats is needed)')
    if formats > 1:
        raise BadLine('keys of more than one format ("text", "prompt"/"completion", "messages"); use one per line')

    def string(obj, key, what):
        if not isinstance(obj[key], str):
            raise BadLine(f"{what} must be a string, got {type_name(obj[key])}")
        return obj[key]

    if "text" in j:
        if not string(j, "text", '"text"'):
            raise BadLine('"text" is empty')
        return {"text": j["text"]}
    if "messages" in j:
        messages = j["messages"]
        if not isinstance(messages, list):
            raise BadLine(f'"messages" must be an array, got {type_name(messages)}')
        if not messages:
            raise BadLine('"messages" is empty')
        out = []
        for i, m in enumerate(messages):
            name = f"messages[{i}]"
            if not isinstance(m, dict):
                raise BadLine(f"{name} must be an object, got {type_name(m)}")
            for key in ("role", "content"):
                if key not in m:
                    raise BadLine(f'{name} has no "{key}"')
            role = string(m, "role", name + ".role")
            if role not in ("system", "user", "assistant"):
                raise BadLine(f'{name}.role "{role}" is not one of system, user, assistant')
            out.append({"role": role, "content": string(m, "content", name + ".content")})
        return {"messages": out}
    if "completion" not in j:
        raise BadLine('has "prompt" but no "completion"')
    if "prompt" not in j:
        raise BadLine('has "completion" but no "prompt"')
    prompt, completion = string(j, "prompt", '"prompt"'), string(j, "completion", '"completion"')
    if not completion:
        raise BadLine('"completion" is empty')
    return {"prompt": prompt, "completion": completion}


# [SECTION] Tokens and loss masks, as lorastudio makes them (engine/train/example.h)

def common_prefix(a, b):
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def encode_pieces(tok, pieces, add_special_tokens):
    """pieces: [(text, trained)]. Each piece is encoded on its own unless that changes the decoded text
    (SentencePiece-style tokenizers prepend a space to every encoded text); then the whole text's ids are
    used and token i goes with the piece its last character falls in."""
    ids, trained, text = [], [], ""
    for k, (piece, is_trained) in enumerate(pieces):
        piece_ids = tok(piece, add_special_tokens=add_special_tokens and k == 0)["input_ids"]
        ids += piece_ids
        trained += [int(is_trained)] * len(piece_ids)
        text += piece
    if len(pieces) > 1:
        whole = tok(text, add_special_tokens=add_special_tokens)["input_ids"]
        if ids != whole and tok.decode(ids) != tok.decode(whole):
            ids, trained = whole, [0] * len(whole)
            begin = offset = 0
            for k, (piece, is_trained) in enumerate(pieces):
                offset += len(piece)
                end = len(whole)
                if k + 1 < len(pieces):
                    prefix = tok(text[:offset], add_special_tokens=add_special_tokens)["input_ids"]
                    end = max(begin, common_prefix(prefix, whole))
                trained[begin:end] = [int(is_trained)] * (end - begin)
                begin = end
    return ids, trained


def render(tok, messages, generation_prompt):
    return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=generation_prompt)


def chat_pieces(tok, messages, train_on_prompt):
    """The conversation as [(text, trained)]: each assistant turn's content and its end-of-turn text
    trained, the template's text around it not. The turns are found by rendering prefixes of the
    conversation, which works for templates that render a prefix as the start of the whole."""
    full = render(tok, messages, False)
    pieces, done = [], 0
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        head = render(tok, messages[:i], True) if i > 0 else ""
        upto = render(tok, messages[: i + 1], False)
        if not (upto.startswith(head) and full.startswith(upto) and len(head) >= done):
            raise BadLine("the chat template does not render this conversation prefix by prefix, so its "
                          "assistant turns cannot be found")
        turn = upto[len(head):].rstrip()  # the whitespace after the end-of-turn token is template text
        pieces += [(head[done:], train_on_prompt), (turn, True)]
        done = len(head) + len(turn)
    pieces.append((full[done:], train_on_prompt))
    return [p for p in pieces if p[0]]


def encode_record(tok, record, train_on_prompt):
    if "messages" in record:
        ids, trained = encode_pieces(tok, chat_pieces(tok, record["messages"], train_on_prompt), False)
    else:
        if "text" in record:
            pieces = [(record["text"], True)]
        else:
            pieces = [(record["prompt"], train_on_prompt), (record["completion"], True)]
        ids, trained = encode_pieces(tok, pieces, True)
        if tok.eos_token_id is None:
            raise BadLine("the tokenizer has no EOS token, needed to end a training example")
        if not ids or ids[-1] != tok.eos_token_id:
            ids.append(tok.eos_token_id)
            trained.append(1)
    if trained:
        trained[0] = 0  # nothing precedes the first token
    return ids, trained


def load_examples(path, tok, data, skip_bad_lines):
    """A file's examples as {"input_ids", "labels"}, cut to max_seq_len."""
    examples, bad = [], []
    for number, record in read_records(path):
        where = f"{path}:{number}"
        try:
            if isinstance(record, BadLine):
                raise record
            ids, trained = encode_record(tok, record, data["train_on_prompt"])
            cut = len(ids) > data["max_seq_len"]
            ids, trained = ids[: data["max_seq_len"]], trained[: data["max_seq_len"]]
            if not any(trained):
                if cut:
                    raise BadLine(f"no trained token left after cutting the example to max_seq_len {data['max_seq_len']}")
                raise BadLine("no trained token" + (" (the conversation has no assistant message)"
                                                    if "messages" in record else ""))
        except BadLine as e:
            if not skip_bad_lines:
                fail(f"{where}: {e}")
            bad.append(f"{where}: {e}")
            continue
        examples.append({"input_ids": ids, "labels": [t if m else -100 for t, m in zip(ids, trained)]})
    for message in bad[:100]:
        say("skipped", message)
    if not examples:
        fail(f"{path}: no usable example")
    return examples


def pack(examples, max_seq_len, order):
    rows = []
    for i in order:
        e = examples[i]
        if not rows or len(rows[-1]["input_ids"]) + len(e["input_ids"]) > max_seq_len:
            rows.append({"input_ids": list(e["input_ids"]), "labels": list(e["labels"])})
        else:
            rows[-1]["input_ids"] += e["input_ids"]
            rows[-1]["labels"] += e["labels"]
    return rows


def load_data(cfg, args, tok, base):
    data = cfg["data"]
    train_file = resolve(args.data, os.getcwd()) or resolve(data["train"], base)
    val_file = resolve(args.val_data, os.getcwd()) or resolve(data.get("validation"), base)
    train = load_examples(train_file, tok, data, args.skip_bad_lines)
    validation = load_examples(val_file, tok, data, args.skip_bad_lines) if val_file else []
    fraction = data.get("validation_fraction", 0.0)
    if not val_file and fraction > 0:
        if len(train) < 2:
            fail(f"{train_file}: validation_fraction needs at least 2 examples, the file has {len(train)}")
        k = min(max(round(fraction * len(train)), 1), len(train) - 1)
        held = set(random.Random(data["seed"]).sample(range(len(train)), k))
        validation = [e for i, e in enumerate(train) if i in held]
        train = [e for i, e in enumerate(train) if i not in held]
    if data["pack"]:
        order = list(range(len(train)))
        if data["shuffle"]:
            random.Random(data["seed"]).shuffle(order)
        train = pack(train, data["max_seq_len"], order)
        validation = pack(validation, data["max_seq_len"], range(len(validation)))
    say(f"{len(train)} training rows from {train_file}" + (f", {len(validation)} validation rows" if validation else ""))
    return train, validation


class Collator:
    """Pads a batch on the right: input_ids with the pad token, labels with -100."""

    def __init__(self, pad_id):
        self.pad_id = pad_id

    def __call__(self, rows):
        import torch
        n = max(len(r["input_ids"]) for r in rows)
        batch = {"input_ids": torch.full((len(rows), n), self.pad_id, dtype=torch.long),
                 "attention_mask": torch.zeros((len(rows), n), dtype=torch.long),
                 "labels": torch.full((len(rows), n), -100, dtype=torch.long)}
        for i, r in enumerate(rows):
            k = len(r["input_ids"])
            batch["input_ids"][i, :k] = torch.tensor(r["input_ids"])
            batch["attention_mask"][i, :k] = 1
            batch["labels"][i, :k] = torch.tensor(r["labels"])
        return batch


# [SECTION] Model, trainer

def pick_dtype(name):
    import torch
    if name == "auto":
        name = "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "f32"
    return name, {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


def load_model(path, dtype):
    import transformers
    from packaging.version import Version
    from transformers import AutoModelForCausalLM
    # transformers 4.56 renamed torch_dtype to dtype.
    key = "dtype" if Version(transformers.__version__) >= Version("4.56") else "torch_dtype"
    return AutoModelForCausalLM.from_pretrained(path, **{key: dtype})


def fields_of(config_class, values, what):
    """The values config_class takes (the names differ across versions: eval_strategy was
    evaluation_strategy before transformers 4.41, max_length was max_seq_length before TRL 0.20)."""
    names = {f.name for f in dataclasses.fields(config_class)}
    renames = {"eval_strategy": "evaluation_strategy", "max_length": "max_seq_length"}
    out = {}
    for key, value in values.items():
        if key not in names and renames.get(key) in names:
            key = renames[key]
        if key in names:
            out[key] = value
        else:
            say(f"{what} has no {key}; left out")
    return out


def main():
    args = parse_args()
    with open(args.config, encoding="utf-8") as f:
        cfg = json.load(f)
    base = os.path.dirname(os.path.abspath(args.config))
    model_path = args.model or resolve(cfg["model"], base)
    if not args.model and not os.path.isdir(model_path):
        fail(f"{model_path}: no such model folder (pass --model DIR or a hub id)")
    init_adapter = resolve(args.init_adapter, os.getcwd()) or resolve(cfg.get("init_adapter"), base)

    training = dict(cfg["training"])
    training["output_dir"] = resolve(args.output_dir, os.getcwd()) or resolve(training["output_dir"], base)
    if args.max_steps is not None:
        training["max_steps"] = args.max_steps
    if args.epochs is not None:
        training["num_train_epochs"] = args.epochs
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        accum = training["gradient_accumulation_steps"]
        if args.same_global_batch and accum % world == 0:
            training["gradient_accumulation_steps"] = accum // world
        elif args.same_global_batch:
            say(f"gradient accumulation {accum} does not divide by {world} processes; a step sees {world}x the "
                "lorastudio run's sequences")
        else:
            say(f"{world} processes: a step sees {world}x the lorastudio run's sequences (--same-global-batch "
                "divides gradient accumulation instead)")

    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoTokenizer
    dtype_name, dtype = pick_dtype(args.dtype)
    training["bf16"] = dtype_name == "bf16"
    training["fp16"] = dtype_name == "f16"

    tok = AutoTokenizer.from_pretrained(model_path)
    train_rows, val_rows = load_data(cfg, args, tok, base)
    if not val_rows:
        training["eval_strategy"] = "no"
        training.pop("eval_steps", None)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    collator = Collator(pad_id)

    model = load_model(model_path, dtype)
    lora = LoraConfig(**cfg["lora"])
    use_trl = False
    if not args.no_trl:
        try:
            import datasets  # noqa: F401  (TRL needs it too)
            import trl
            use_trl = True
        except ImportError as e:
            say(f"{e.name} is not installed, so no TRL: training with transformers' Trainer and PEFT (the same "
                "model, data and hyperparameters)")

    if init_adapter:
        say(f"starting from the adapter in {init_adapter}")
        model = PeftModel.from_pretrained(model, init_adapter, is_trainable=True)
    if use_trl:
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
        training.update(max_length=cfg["data"]["max_seq_len"], packing=False,
                        dataset_kwargs={"skip_prepare_dataset": True})
        kwargs = {"model": model, "args": SFTConfig(**fields_of(SFTConfig, training, "SFTConfig")),
                  "train_dataset": Dataset.from_list(train_rows),
                  "eval_dataset": Dataset.from_list(val_rows) if val_rows else None,
                  "data_collator": collator}
        parameters = inspect.signature(SFTTrainer.__init__).parameters
        kwargs["processing_class" if "processing_class" in parameters else "tokenizer"] = tok
        if not init_adapter:
            kwargs["peft_config"] = lora
        trainer = SFTTrainer(**kwargs)
        say(f"TRL {trl.__version__} SFTTrainer")
    else:
        from transformers import Trainer, TrainingArguments
        if not init_adapter:
            model = get_peft_model(model, lora)
        trainer = Trainer(model=model, args=TrainingArguments(**fields_of(TrainingArguments, training, "TrainingArguments")),
                          train_dataset=train_rows, eval_dataset=val_rows or None, data_collator=collator)
        say("transformers Trainer")
    if int(os.environ.get("RANK", "0")) == 0:
        trainer.model.print_trainable_parameters()

    trainer.train()
    if val_rows and training.get("eval_strategy", "no") == "no":
        say("validation:", trainer.evaluate())
    adapter_dir = os.path.join(training["output_dir"], "adapter")
    trainer.save_model(adapter_dir)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    if trainer.is_world_process_zero():
        with open(os.path.join(training["output_dir"], "log_history.json"), "w", encoding="utf-8") as f:
            json.dump(trainer.state.log_history, f, indent=1)
    say(f"done after {trainer.state.global_step} steps" +
        (f": loss {losses[0]:.4f} -> {losses[-1]:.4f}" if losses else "") + f"; adapter in {adapter_dir}")


if __name__ == "__main__":
    main()
