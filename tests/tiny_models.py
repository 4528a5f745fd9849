"""Tiny random models written here, so the real loading code of every local backend runs offline.

- ``write_tiny_gguf``: a one-layer llama in GGUF (written with the ``gguf`` package), SentencePiece
  vocabulary of the three specials, the 256 byte tokens and a few words, so any text tokenizes. It
  loads in llama.cpp (in process, and behind llama-cpp-python's OpenAI-compatible server).
- ``write_tiny_llava``: a LLaVA (CLIP vision tower + llama) with its processor, saved with
  ``save_pretrained``; ``AutoModelForImageTextToText`` and ``AutoProcessor`` load it.
- ``write_tiny_lm``: a one-layer llama causal LM with a word-level tokenizer and a chat template.
- ``write_tiny_whisper``: a one-layer multilingual Whisper with its processor (Whisper's token layout, timestamps
  included) and generation config, saved with ``save_pretrained``; the ASR pipeline and ``generate(...,
  return_timestamps=True)`` run on it, short-form and long-form.

- ``write_tiny_qa``: a two-layer BERT with a span head and a WordPiece tokenizer, trained here for seconds to
  point at two made-up words (the one model here that is trained, not random).

The other weights are random: what is under test is the protocol and the loading path, never the answer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

WORDS = ["the", "a", "answer", "is", "Uppsala", "born", "in", "where", "was", "painter", "picture", "what", "this"]


def write_tiny_gguf(path: Path, n_ctx: int = 4096, chat_template: bool = True) -> Path:
    """A one-layer random llama GGUF; ``chat_template=False`` leaves out ``tokenizer.chat_template``, as base models'
    conversions do."""
    import gguf

    rng = np.random.default_rng(0)
    tokens: list[bytes] = [b"<unk>", b"<s>", b"</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>".encode() for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    tokens += [f"\u2581{w}".encode() for w in WORDS]
    types += [gguf.TokenType.NORMAL] * len(WORDS)
    scores = [0.0] * (3 + 256) + [-float(i) for i in range(len(WORDS))]
    n_vocab, n_embd, n_ff, n_head, n_layer = len(tokens), 32, 64, 2, 1

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-random-llama")
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    # content is a string, or (an image message) a list of parts: text shown, a picture as its URL
    if chat_template:
        w.add_chat_template(
            "{% for m in messages %}{{ m['role'] }}: {% if m['content'] is string %}{{ m['content'] }}"
            "{% else %}{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}"
            "{% else %} {{ p['image_url']['url'] }}{% endif %}{% endfor %}{% endif %}\n{% endfor %}assistant:"
        )

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    w.add_tensor("token_embd.weight", weights(n_vocab, n_embd))
    w.add_tensor("output_norm.weight", np.ones(n_embd, np.float32))
    w.add_tensor("output.weight", weights(n_vocab, n_embd))
    for i in range(n_layer):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(n_embd, np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(p + name + ".weight", weights(n_embd, n_embd))
        w.add_tensor(p + "ffn_norm.weight", np.ones(n_embd, np.float32))
        w.add_tensor(p + "ffn_gate.weight", weights(n_ff, n_embd))
        w.add_tensor(p + "ffn_up.weight", weights(n_ff, n_embd))
        w.add_tensor(p + "ffn_down.weight", weights(n_embd, n_ff))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _word_tokenizer(extra: list[str]):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["of", "who", "holm", "margit", "evidence", "question", "[1]", "[2]", ".", *(w.lower() for w in WORDS)]
    vocab = {tok: i for i, tok in enumerate(dict.fromkeys(["<pad>", "<s>", "</s>", "<unk>", *extra, *words]))}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    specials = {"image_token": "<image>"} if "<image>" in extra else {}
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                  unk_token="<unk>", extra_special_tokens=specials)  # fmt: skip
    return tok, vocab


def write_tiny_llava(path: Path) -> Path:
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tok, vocab = _word_tokenizer(["<image>"])
    template = (
        "{% for m in messages %}{{ m['role'] }} : {% if m['content'] is string %}{{ m['content'] }} {% else %}"
        "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }} {% endif %}"
        "{% endfor %}{% endif %}{% endfor %}{% if add_generation_prompt %}assistant :{% endif %}"
    )
    tok.chat_template = template
    torch.manual_seed(0)
    text = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                       num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096, pad_token_id=0,
                       bos_token_id=1, eos_token_id=2)  # fmt: skip
    vision = CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                              image_size=32, patch_size=8, projection_dim=16)  # fmt: skip
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=vocab["<image>"],
                         vision_feature_layer=-1, vision_feature_select_strategy="default")  # fmt: skip
    LlavaForConditionalGeneration(config).save_pretrained(path)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    LlavaProcessor(image_processor=images, tokenizer=tok, patch_size=8, vision_feature_select_strategy="default",
                   chat_template=template, num_additional_image_tokens=1).save_pretrained(path)  # fmt: skip
    return path


def write_tiny_lm(path: Path) -> Path:
    """A one-layer llama causal LM with a word-level tokenizer and a chat template (text only)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok, vocab = _word_tokenizer([])
    tok.chat_template = (
        "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant :{% endif %}"
    )
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=4096, pad_token_id=0,
                         bos_token_id=1, eos_token_id=2)  # fmt: skip
    LlamaForCausalLM(config).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def write_tiny_whisper(path: Path) -> Path:
    """A one-layer multilingual Whisper with its processor and a generation config that predicts timestamps.

    The token ids are laid out as Whisper's, which generation and decoding rely on: byte-level BPE text (the 256
    bytes, and merges that make each of ``WORDS`` one token), ``<|endoftext|>``, ``<|startoftranscript|>``, the
    language tokens, ``<|translate|>``, ``<|transcribe|>``, ``<|startoflm|>``, ``<|startofprev|>``, ``<|nospeech|>``,
    ``<|notimestamps|>`` (the last special token), then the timestamps ``<|0.00|>`` ... ``<|30.00|>`` (0.02 s apart).
    """
    import torch
    from tokenizers import AddedToken, pre_tokenizers
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )
    from transformers.models.whisper.tokenization_whisper import LANGUAGES

    vocab = {c: i for i, c in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges: list[tuple[str, str]] = []
    for word in WORDS:  # " word" merged left to right into one token
        left, *rest = "\u0120" + word.lower()
        for c in rest:
            if left + c not in vocab:
                merges.append((left, c))
                vocab[left + c] = len(vocab)
            left += c
    langs = [f"<|{code}|>" for code in LANGUAGES]
    specials = ["<|startoftranscript|>", *langs, "<|translate|>", "<|transcribe|>", "<|startoflm|>", "<|startofprev|>",
                "<|nospeech|>", "<|notimestamps|>"]  # fmt: skip
    # <|endoftext|> (bos, eos, unk and pad, as in the released checkpoints: the pipeline batches with it) goes first
    tok = WhisperTokenizer(vocab=vocab, merges=merges, pad_token="<|endoftext|>", extra_special_tokens=specials)
    tok.add_tokens([AddedToken(f"<|{i * 0.02:.2f}|>", special=False, normalized=False) for i in range(1501)])
    ids = dict(zip(specials, tok.convert_tokens_to_ids(specials), strict=True))
    eot, sot = tok.eos_token_id, ids["<|startoftranscript|>"]

    torch.manual_seed(0)
    config = WhisperConfig(vocab_size=len(tok), num_mel_bins=80, d_model=32, encoder_layers=1, decoder_layers=1,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                           max_source_positions=1500, max_target_positions=448, decoder_start_token_id=sot,
                           pad_token_id=eot, bos_token_id=eot, eos_token_id=eot,
                           begin_suppress_tokens=None)  # fmt: skip
    model = WhisperForConditionalGeneration(config)
    # what generate(return_timestamps=True, language=..., task=...) reads, as in the released checkpoints
    model.generation_config = GenerationConfig(
        decoder_start_token_id=sot, bos_token_id=eot, eos_token_id=eot, pad_token_id=eot, max_length=448,
        begin_suppress_tokens=[vocab["\u0120"], eot], suppress_tokens=[], is_multilingual=True,
        lang_to_id={lang: ids[lang] for lang in langs},
        task_to_id={"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        no_timestamps_token_id=ids["<|notimestamps|>"], prev_sot_token_id=ids["<|startofprev|>"],
        max_initial_timestamp_index=50, alignment_heads=[[0, 0], [0, 1]], return_timestamps=False,
    )  # fmt: skip
    model.save_pretrained(path)
    WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=tok).save_pretrained(path)
    return path


#: the answer words ``write_tiny_qa`` teaches its model to point at, each split into word pieces by its vocabulary
#: ("Uppsala" -> upp ##sala), so a span of several tokens maps back to one word
QA_ANSWERS = {"uppsala": ("upp", "##sala"), "quibbletown": ("quib", "##ble", "##town")}
#: the rest of its vocabulary (any other word is [UNK]); the art corpus's words among them
QA_FILLER = ("the", "a", "of", "in", "is", "was", "and", "at", "he", "she", "her", "his", "born", "where", "who",
             "what", "painted", "painting", "museum", "lake", "mill", "harbour", "boats", "studied", "academy",
             "drawing", "years", "sculptor", "bronze", "city", "town", "river", "name", "works", "old")  # fmt: skip


def write_tiny_qa(path: Path, steps: int = 120, seed: int = 0) -> Path:
    """A two-layer BERT with a span head (``BertForQuestionAnswering``) and a fast WordPiece tokenizer, trained here
    for a few seconds on generated passages to point at the words of ``QA_ANSWERS`` (their first piece starts the
    span, their last ends it) and at [CLS] when a passage holds none, as a SQuAD 2.0 model declines. It reads no
    meaning: it finds those words. What a test checks with it is what a reader does with a model's pointers:
    windows over long passages, tokens back to characters, the best span across passages, declining."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertForQuestionAnswering, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = [p for ps in QA_ANSWERS.values() for p in ps]
    vocab = {t: i for i, t in enumerate(dict.fromkeys([*specials, *QA_FILLER, *pieces, ".", ",", "?", "'", "-"]))}
    core = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))  # BERT's uncased pipeline, on this vocabulary
    core.normalizer = normalizers.BertNormalizer(lowercase=True)
    core.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    core.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    core.decoder = decoders.WordPiece()
    tok = BertTokenizerFast(tokenizer_object=core, unk_token="[UNK]", sep_token="[SEP]", pad_token="[PAD]",
                            cls_token="[CLS]", mask_token="[MASK]")  # fmt: skip
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)  # fmt: skip
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same weights on any machine: one thread sums in one order
    torch.manual_seed(seed)
    model = BertForQuestionAnswering(config)
    rng = np.random.default_rng(seed)
    answers = list(QA_ANSWERS)
    optim = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        questions, passages, spans = [], [], []
        for _ in range(32):
            words = list(rng.choice(QA_FILLER, size=int(rng.integers(4, 30))))
            if rng.random() < 0.6:
                at = int(rng.integers(0, len(words) + 1))
                words.insert(at, answers[int(rng.integers(len(answers)))].capitalize())
                spans.append(at)
            else:
                spans.append(-1)
            questions.append(" ".join(rng.choice(QA_FILLER, size=int(rng.integers(2, 8)))) + "?")
            passages.append(" ".join(words) + ".")
        enc = tok(questions, passages, padding=True, truncation="only_second", max_length=96, return_tensors="pt",
                  return_offsets_mapping=True)  # fmt: skip
        starts, ends = [], []
        for i, at in enumerate(spans):
            if at < 0:
                starts.append(0)
                ends.append(0)
                continue
            word = passages[i].split()[at]
            char = len(" ".join(passages[i].split()[:at])) + (1 if at else 0)
            first = enc.char_to_token(i, char, sequence_index=1)
            last = enc.char_to_token(i, char + len(word) - 1, sequence_index=1)
            starts.append(first)
            ends.append(last)
        enc.pop("offset_mapping")
        out = model(**enc, start_positions=torch.tensor(starts), end_positions=torch.tensor(ends))
        optim.zero_grad()
        out.loss.backward()
        optim.step()
    torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
