#!/usr/bin/python3
"""Expected placeholder token counts for cases.json, computed in Python —
the language vLLM's processors run in, so round() is Python's (half to
even), // floors and int() truncates as they do there — from the rules of
the processors as published (transformers' image processors and vLLM's
model processing classes; docs/multimodal.md gives the derivations). It
shares no code with the Go implementation. Run: ./ref.py > cases.json"""
import json, math

def smart_resize(h, w, factor, min_px, max_px):
    if max(h, w) / min(h, w) > 200:
        return None  # the processor raises
    hb, wb = round(h / factor) * factor, round(w / factor) * factor
    if hb * wb > max_px:
        beta = math.sqrt(h * w / max_px)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif hb * wb < min_px:
        beta = math.sqrt(min_px / (h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    return hb, wb

def qwen(h, w, patch, min_px, max_px):
    r = smart_resize(h, w, patch * 2, min_px, max_px)
    if r is None:
        return None
    return (r[0] // patch) * (r[1] // patch) // 4  # grid_t = 1, merge 2×2

def gemma3(h, w):
    return 2 + 256 + 2  # "\n\n", <start_of_image>, 256 soft tokens, <end_of_image>, "\n\n"

def llava(h, w):
    return (336 // 14) ** 2

def pixtral(h, w, longest, unit):
    ratio = max(w / longest, h / longest)
    if ratio > 1:
        w, h = int(math.floor(w / ratio)), int(math.floor(h / ratio))
    rows, cols = (h - 1) // unit + 1, (w - 1) // unit + 1
    return rows * (cols + 1)  # [IMG]×cols + [IMG_BREAK] per row, the last one [IMG_END]

def llama4_canvases(max_tiles, tile):
    by_ratio = {}
    for n in range(max_tiles, 0, -1):
        for f in sorted(d for d in range(1, n + 1) if n % d == 0):
            by_ratio.setdefault(f / (n // f), []).append((f, n // f))
    return [(a * tile, b * tile) for v in by_ratio.values() for a, b in v]

def llama4(h, w, max_tiles=16, tile=336):
    canv = llama4_canvases(max_tiles, tile)
    scales = [min(ch / h, cw / w) for ch, cw in canv]
    ups = [s for s in scales if s >= 1]
    sel = min(ups) if ups else max(s for s in scales if s < 1)
    cands = [c for c, s in zip(canv, scales) if s == sel]
    ch, cw = min(cands, key=lambda c: c[0] * c[1])  # min() keeps the first of equals
    rows, cols = ch // tile, cw // tile
    per = (tile // 14) ** 2 // 4
    n = 3 + per  # <|image_start|>, <|image|>, the global tile's patches, <|image_end|>
    if rows * cols > 1:
        n += rows * cols * per + rows * (cols - 1) + rows
    return n

def internvl(h, w, min_num=1, max_num=12, image_size=448, thumbnail=True):
    # vLLM's internvl.py: get_internvl_target_ratios, find_closest_aspect_ratio,
    # calculate_internvl_targets; 256 <IMG_CONTEXT> per crop between <img> and </img>
    ratios = sorted({(i, j) for n in range(min_num, max_num + 1) for i in range(1, n + 1)
                     for j in range(1, n + 1) if min_num <= i * j <= max_num}, key=lambda x: x[0] * x[1])
    aspect = w / h
    best_diff, best = float('inf'), (1, 1)
    for r in ratios:
        diff = abs(aspect - r[0] / r[1])
        if diff < best_diff:
            best_diff, best = diff, r
        elif diff == best_diff and w * h > 0.5 * image_size * image_size * r[0] * r[1]:
            best = r
    blocks = best[0] * best[1]
    if thumbnail and blocks != 1:
        blocks += 1
    return 2 + blocks * int((image_size // 14) ** 2 * 0.5 ** 2)

def phi4mm_image(h, w, dynamic_hd=36, crop=448, patch=14, comp=2):
    # vLLM phi4mm.py: _find_target_aspect_ratio, _get_padding_size,
    # _compute_num_image_tokens (find_closest_aspect_ratio as InternVL's);
    # the model's Phi4MMImageProcessor, which vLLM runs on the image,
    # refuses a scaled side under 10 px
    wc, hc = math.ceil(w / float(crop)), math.ceil(h / float(crop))
    if wc * hc > dynamic_hd:
        ratios = sorted({(i, j) for i in range(1, dynamic_hd + 1) for j in range(1, dynamic_hd + 1)
                         if 1 <= i * j <= dynamic_hd}, key=lambda x: x[0] * x[1])
        aspect, best_diff, best = w / h, float('inf'), (1, 1)
        for r in ratios:
            diff = abs(aspect - r[0] / r[1])
            if diff < best_diff:
                best_diff, best = diff, r
            elif diff == best_diff and w * h > 0.5 * crop * crop * r[0] * r[1]:
                best = r
        wc, hc = best
    tw, th = crop * wc, crop * hc
    rw, rh = tw / w, th / h
    if rw < rh:
        pad_w, pad_h = 0, th - int(h * rw)
        new_w, new_h = tw, int(h * rw)
    else:
        pad_w, pad_h = tw - int(w * rh), 0
        new_w, new_h = int(w * rh), th
    if min(new_h, th) < 10 or min(new_w, tw) < 10:
        return None  # Phi4MMImageProcessor.dynamic_preprocess raises
    fw, fh = tw // patch, th // patch
    if pad_w >= patch:
        fw -= math.floor(pad_w / patch)
    elif pad_h >= patch:
        fh -= math.floor(pad_h / patch)
    pw = fw // comp + (1 if fw % comp else 0)
    ph = fh // comp + (1 if fh % comp else 0)
    side = crop // patch // comp
    return side * side + 1 + pw * ph + ph + side

def phi4mm_audio(seconds, rate):
    # vLLM audio.py resample_audio_scipy (integer ratio), then phi4mm.py
    # get_audio_num_frames and _compute_audio_embed_size (compression 8)
    n = round(seconds * rate)
    if rate > 16000:
        down = rate // 16000
        n = -(-n // down)
    elif rate < 16000:
        n = n * (16000 // rate)
    frames = (n - 400) // 160 + 1
    if frames < 1:
        return None
    return frames // 8 + (1 if frames % 8 else 0)

def qwen2_audio(seconds, rate, n_samples=480000):
    n = round(seconds * rate)
    if rate != 16000:
        n = math.ceil(n * 16000 / rate)
    n = min(n, n_samples)  # WhisperFeatureExtractor truncates to n_samples
    frames = len(range(0, n, 160))  # the attention mask, every 160th sample
    conv = (frames - 1) // 2 + 1
    out = (conv - 2) // 2 + 1
    return out if out > 0 else None

def omni_video_with_audio(w, h, frames, seconds, rate, seconds_per_chunk=2, tokens_per_second=25):
    """Qwen2.5-Omni's video under use_audio_in_video: vLLM's
    omni_get_updates_use_audio_in_video, its whole token list counted."""
    # Qwen2.5-VL's video grid under vLLM's defaults: the loader's 32 frames
    # at most, two per temporal patch, frames resized to multiples of 28
    # within [128*28*28, 768*28*28] pixels, 2x2 merged
    n = min(frames, 32)
    r = smart_resize(h, w, 28, 128 * 28 * 28, 768 * 28 * 28)
    grid_t, grid_h, grid_w = -(-n // 2), r[0] // 14, r[1] // 14
    # the sound track's tokens as an audio clip's, with no refusal of none
    audio_len = qwen2_audio(seconds, rate, 4800000) or 0
    per_chunk = int(tokens_per_second * seconds_per_chunk)
    t_index = [int(i * 1.0 * tokens_per_second) for i in range(grid_t)]  # second_per_grid 1.0
    ranges = [[] for _ in range(max(t_index) // per_chunk + 1)]
    for x in t_index:
        ranges[x // per_chunk].append(x)
    updates = ["<|audio_bos|>"]
    added = 0
    for chunk in ranges:
        updates += ["<|VIDEO|>"] * (len(chunk) * grid_h * grid_w // 4)
        a = min(per_chunk, audio_len - added)
        updates += ["<|AUDIO|>"] * a
        added += a
    updates += ["<|AUDIO|>"] * (audio_len - added)
    updates.append("<|audio_eos|>")
    return len(updates)

def whisper(seconds, rate=16000, chunk_s=30, overlap_s=1, hop=160):
    # vLLM speech_to_text.py: _preprocess_speech_to_text, _split_audio and
    # _find_split_point on audio whose 0.1-s windows are equally loud (the
    # first candidate wins); whisper.py get_num_audio_tokens
    n = round(seconds * rate)
    duration = n / rate
    chunk, overlap = rate * chunk_s, rate * overlap_s
    windows = 1
    if duration > chunk_s:
        windows, i = 0, 0
        while i < n:
            if i + chunk >= n:
                windows += 1
                break
            windows += 1
            i = i + chunk - overlap  # the quietest window's start: the first
    return windows, math.ceil(duration * rate / hop)

def linspace(total, n, conv):
    # np.linspace(0, total - 1, n): i * step, the endpoint exact
    if n == 1:
        return [0]
    step = (total - 1) / (n - 1)
    out = [conv(i * step) for i in range(n)]
    out[-1] = total - 1
    return out

def qwen3_video(w, h, frames, fps, loader_frames=32, sample_fps=2, min_frames=4, max_frames=768,
                min_px=4096, max_px=25165824, factor=32, patch=16):
    # vLLM's OpenCV loader takes 32 frames of a longer clip (int() of
    # linspace) and hands a shorter clip whole to Qwen3VLVideoProcessor,
    # which samples it at 2 fps (round() of linspace).
    if frames > loader_frames:
        idx = linspace(frames, loader_frames, int)
    else:
        n = int(frames / fps * sample_fps)
        n = min(max(n, min_frames), max_frames, frames)
        idx = linspace(frames, n, round)
    n = len(idx)
    if n < 2:
        return None  # smart_resize: t must be larger than temporal_factor
    # the video smart_resize
    if h < factor or w < factor:
        scale = max(factor / h, factor / w)
        h, w = int(h * scale), int(w * scale)
    if max(h, w) / min(h, w) > 200:
        return None
    hb, wb = round(h / factor) * factor, round(w / factor) * factor
    tb = round(n / 2) * 2
    if tb * hb * wb > max_px:
        beta = math.sqrt(n * h * w / max_px)
        hb = max(factor, math.floor(h / beta / factor) * factor)
        wb = max(factor, math.floor(w / beta / factor) * factor)
    elif tb * hb * wb < min_px:
        beta = math.sqrt(min_px / (n * h * w))
        hb = math.ceil(h * beta / factor) * factor
        wb = math.ceil(w * beta / factor) * factor
    per_frame = (hb // patch) * (wb // patch) // 4
    if len(idx) % 2:
        idx = idx + [idx[-1]]
    total = 0
    for i in range(0, len(idx), 2):
        t = (idx[i] / fps + idx[i + 1] / fps) / 2
        # f"<{t:.1f} seconds>" in Qwen's vocabulary: each digit a token
        # (the pre-tokenizer's \p{N} rule), "<", ".", " seconds", ">" one each
        text = "%.1f" % t
        total += sum(c.isdigit() for c in text) + 4
        total += 1 + per_frame + 1  # <|vision_start|> pads <|vision_end|>
    return total

LLAVA_NEXT_PINPOINTS = [(336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008)]

def llava_next(h, w, pinpoints=LLAVA_NEXT_PINPOINTS, tile=336, npatches=24):
    # transformers' select_best_resolution
    best, max_eff, min_waste = None, 0, float("inf")
    for ch, cw in pinpoints:
        scale = min(cw / w, ch / h)
        dw, dh = int(w * scale), int(h * scale)
        eff = min(dw * dh, w * h)
        waste = cw * ch - eff
        if eff > max_eff or (eff == max_eff and waste < min_waste):
            best, max_eff, min_waste = (ch, cw), eff, waste
    gh, gw = best[0] // tile, best[1] // tile
    # vLLM's _get_num_unpadded_features
    cur_h, cur_w = npatches * gh, npatches * gw
    if w / h > cur_w / cur_h:
        new_h = int(round(h * (cur_w / w), 7))
        cur_h -= 2 * ((cur_h - new_h) // 2)
    else:
        new_w = int(round(w * (cur_h / h), 7))
        cur_w -= 2 * ((cur_w - new_w) // 2)
    return 576 + cur_h * cur_w + cur_h  # base view + unpadded grid + newlines

# LLaVA-OneVision's canvases (anyres_max_9 in llava-hf's config.json):
# 1x1 to 6x6 crops of 384 px, rows first
LLAVA_OV_PINPOINTS = [(384 * i, 384 * j) for i in range(1, 7) for j in range(1, 7)]

def llava_onevision(h, w, tile=384, npatches=27, base=729):
    # LLaVA-NeXT's select_best_resolution and unpadding, on SigLIP's 27x27
    # features (no CLS; the "full" strategy keeps all 729), then vLLM's
    # LlavaOnevisionProcessingInfo._get_num_unpadded_features max-9 step
    best, max_eff, min_waste = None, 0, float("inf")
    for ch, cw in LLAVA_OV_PINPOINTS:
        scale = min(cw / w, ch / h)
        dw, dh = int(w * scale), int(h * scale)
        eff = min(dw * dh, w * h)
        waste = cw * ch - eff
        if eff > max_eff or (eff == max_eff and waste < min_waste):
            best, max_eff, min_waste = (ch, cw), eff, waste
    cur_h, cur_w = npatches * (best[0] // tile), npatches * (best[1] // tile)
    if w / h > cur_w / cur_h:
        new_h = int(round(h * (cur_w / w), 7))
        cur_h -= 2 * ((cur_h - new_h) // 2)
    else:
        new_w = int(round(w * (cur_h / h), 7))
        cur_w -= 2 * ((cur_w - new_w) // 2)
    feats, rows = cur_h * cur_w, cur_h
    ratio = math.sqrt(cur_h * cur_w / (9 * npatches ** 2))
    if ratio > 1.1:
        feats, rows = int(cur_h // ratio) * int(cur_w // ratio), int(cur_h // ratio)
    return base + feats + rows

def llava_onevision_video(frames, loader_frames=32):
    # every sampled frame's 27x27 features pooled 2x2 (ceil: 14x14), one newline
    return min(frames, loader_frames) * math.ceil(27 / 2) ** 2 + 1

def gemma3_pan_and_scan(h, w, min_crop=256, max_crops=4, min_ratio=1.2):
    # vLLM's Gemma3ProcessingInfo.get_num_crops
    if w >= h:
        if w / h < min_ratio:
            return 260
        n = max(2, min(int(math.floor(w / min_crop)), int(math.floor(w / h + 0.5))))
        nw, nh = min(max_crops, n), 1
    else:
        if h / w < min_ratio:
            return 260
        n = max(2, min(int(math.floor(h / min_crop)), int(math.floor(h / w + 0.5))))
        nw, nh = 1, min(max_crops, n)
    if min(int(math.ceil(w / nw)), int(math.ceil(h / nh))) < min_crop:
        return 260
    crops = nw * nh
    # "Here is the original image " + seq + " and here are some crops to
    # help you see better " + " ".join([seq] * crops): in Gemma 3's
    # vocabulary the words are 6 + 10 tokens ("Here", " is", …, " image",
    # " "; " and", …, " better"), each " " before a seq one more, and each
    # seq "\n\n" <start_of_image> 256 × <image_soft_token> <end_of_image> "\n\n"
    return 6 + 260 + 10 + crops * (1 + 260)

sizes = [(1, 1), (10, 10), (27, 28), (28, 28), (29, 29), (42, 42), (56, 56), (70, 70), (100, 3),
         (224, 224), (336, 336), (480, 640), (512, 512), (600, 800), (720, 1280), (768, 1024),
         (1000, 1), (1024, 1024), (1080, 1920), (1123, 797), (1536, 1536), (2048, 2048),
         (2160, 3840), (3000, 40), (4000, 20), (4096, 4096), (4096, 1024), (13, 2601), (333, 777)]
cases = []
for h, w in sizes:
    for model, n in [
        ("Qwen/Qwen2.5-VL-7B-Instruct", qwen(h, w, 14, 3136, 12845056)),
        ("Qwen/Qwen2-VL-7B-Instruct", qwen(h, w, 14, 3136, 12845056)),
        ("Qwen/Qwen3-VL-8B-Instruct", qwen(h, w, 16, 65536, 16777216)),
        ("google/gemma-3-4b-it", gemma3(h, w)),
        ("llava-hf/llava-1.5-7b-hf", llava(h, w)),
        ("llava-hf/llava-v1.6-mistral-7b-hf", llava_next(h, w)),
        ("llava-hf/llava-onevision-qwen2-7b-ov-hf", llava_onevision(h, w)),
        ("mistral-community/pixtral-12b", pixtral(h, w, 1024, 16)),
        ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", pixtral(h, w, 1540, 28)),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", llama4(h, w)),
        ("OpenGVLab/InternVL2_5-8B", internvl(h, w)),
        ("OpenGVLab/InternVL3-8B", internvl(h, w)),
        # the thinker's images are Qwen2.5-VL's, behind <|IMAGE|>
        ("Qwen/Qwen2.5-Omni-7B", qwen(h, w, 14, 3136, 12845056)),
        ("microsoft/Phi-4-multimodal-instruct", phi4mm_image(h, w)),
    ]:
        cases.append({"model": model, "kind": "image", "width": w, "height": h, "tokens": n})
# min/max pixel clamps set through the preprocessor config
for h, w in [(28, 28), (1024, 1024), (4096, 4096), (100, 3000), (56, 56)]:
    for lo, hi in [(256 * 28 * 28, 1280 * 28 * 28), (4 * 28 * 28, 16 * 28 * 28), (100000, 200000)]:
        cases.append({"model": "Qwen/Qwen2.5-VL-7B-Instruct", "kind": "image", "width": w, "height": h,
                      "min_pixels": lo, "max_pixels": hi, "tokens": qwen(h, w, 14, lo, hi)})
# InternVL: the grid's tie rule (a larger grid of the same shape wins when the
# image covers over half of it) and other max_dynamic_patch settings
for h, w in [(448, 448), (449, 449), (633, 633), (634, 634), (635, 635), (896, 896), (950, 950), (951, 951),
             (1344, 1344), (1345, 1345),
             (448, 896), (448, 1344), (900, 300), (1000, 1500), (480, 1600), (4096, 300)]:
    cases.append({"model": "OpenGVLab/InternVL2_5-8B", "kind": "image", "width": w, "height": h,
                  "tokens": internvl(h, w)})
    for mx in [1, 6, 24]:
        cases.append({"model": "OpenGVLab/InternVL2_5-8B", "kind": "image", "width": w, "height": h,
                      "max_dynamic_patch": mx, "tokens": internvl(h, w, max_num=mx)})
for secs in [0.001, 0.01, 0.02, 0.025, 0.1, 0.5, 1, 2.5, 7.3, 10, 29.99, 30, 30.01, 60, 300]:
    for rate in [16000, 44100, 8000]:
        cases.append({"model": "Qwen/Qwen2-Audio-7B-Instruct", "kind": "audio", "seconds": secs,
                      "rate": rate, "tokens": qwen2_audio(secs, rate)})
# Qwen2.5-Omni: Qwen2-Audio's rule with its preprocessor's 300-s window
# (chunk_length 300, n_samples 4,800,000)
for secs in [0.001, 0.01, 0.025, 0.1, 0.5, 1, 7.3, 30, 30.01, 60, 299.99, 300, 300.01, 360]:
    for rate in [16000, 44100, 8000]:
        cases.append({"model": "Qwen/Qwen2.5-Omni-7B", "kind": "audio", "seconds": secs,
                      "rate": rate, "tokens": qwen2_audio(secs, rate, 4800000)})
# Phi-4-multimodal: images past the 36-crop bound, and audio at four rates
for h, w in [(1, 30), (30, 1), (5000, 100), (100, 5000), (448, 448), (449, 449), (448, 3000), (2688, 2688), (2689, 2689), (3000, 3000), (300, 8000),
             (8000, 300), (1000, 700), (14, 5000), (896, 897)]:
    cases.append({"model": "microsoft/Phi-4-multimodal-instruct", "kind": "image", "width": w, "height": h,
                  "tokens": phi4mm_image(h, w)})
for secs in [0.001, 0.02, 0.025, 0.03, 0.1, 0.5, 1, 7.3, 30, 60, 300]:
    for rate in [16000, 44100, 8000, 22050]:
        cases.append({"model": "microsoft/Phi-4-multimodal-instruct", "kind": "audio", "seconds": secs,
                      "rate": rate, "tokens": phi4mm_audio(secs, rate)})
# Whisper (openai/whisper-large-v3): the windows of a transcription and
# the audio tokens its streamed usage adds to the decoder prompt
for secs in [0.001, 0.01, 0.1, 1, 10, 29.99, 30, 30.01, 58.99, 59, 59.01, 60, 88, 89, 120, 300, 1500]:
    w, t = whisper(secs)
    cases.append({"model": "openai/whisper-large-v3", "kind": "transcription", "seconds": secs,
                  "windows": w, "tokens": t})
# several images in one prompt: the counts add up
for model, f in [("Qwen/Qwen2.5-VL-7B-Instruct", lambda h, w: qwen(h, w, 14, 3136, 12845056)),
                 ("meta-llama/Llama-4-Scout-17B-16E-Instruct", llama4),
                 ("mistral-community/pixtral-12b", lambda h, w: pixtral(h, w, 1024, 16)),
                 ("OpenGVLab/InternVL3-8B", internvl),
                 ("llava-hf/llava-v1.6-mistral-7b-hf", llava_next),
                 ("microsoft/Phi-4-multimodal-instruct", phi4mm_image)]:
    imgs = [(1024, 1024), (480, 640), (56, 56), (2160, 3840)]
    cases.append({"model": model, "kind": "images", "sizes": [[w, h] for h, w in imgs],
                  "tokens": sum(f(h, w) for h, w in imgs)})
# LLaVA-NeXT: the canvas choice at its ties and the unpadding's rounding
for h, w in [(336, 336), (336, 672), (672, 336), (500, 1000), (1000, 500), (337, 673), (400, 1200),
             (1200, 400), (300, 1001), (1008, 1008), (2000, 3000), (3000, 2000), (672, 1008), (999, 333),
             (7, 3000), (3000, 7), (1, 2), (2, 1), (447, 891), (768, 1366)]:
    cases.append({"model": "llava-hf/llava-v1.6-vicuna-7b-hf", "kind": "image", "width": w, "height": h,
                  "tokens": llava_next(h, w)})
# Gemma 3 with do_pan_and_scan: the ratio threshold, the crop count's two
# bounds and the minimum crop size
for h, w in [(400, 479), (400, 480), (400, 481), (500, 1000), (400, 1000), (400, 1200), (300, 3000),
             (1000, 400), (100, 2000), (255, 2000), (256, 2000), (600, 700), (1080, 1920), (2000, 300),
             (512, 1536), (511, 1536), (1, 1), (13, 2601), (4096, 1024), (3000, 40)]:
    cases.append({"model": "google/gemma-3-4b-it", "kind": "image", "width": w, "height": h,
                  "do_pan_and_scan": True, "tokens": gemma3_pan_and_scan(h, w)})
# Qwen3-VL video: clips of 1 to 9000 frames at 1 to 60 fps, tiny to 4K
for w, h in [(64, 64), (640, 360), (1920, 1080), (3840, 2160), (20, 4000), (1280, 720), (16, 16)]:
    for frames, fps in [(1, 1), (2, 1), (3, 30), (7, 7), (10, 10), (25, 10), (32, 30), (33, 30),
                        (300, 30), (301, 29.97), (900, 30), (9000, 30), (48, 24), (120, 60)]:
        cases.append({"model": "Qwen/Qwen3-VL-8B-Instruct", "kind": "video", "width": w, "height": h,
                      "frames": frames, "fps": fps, "tokens": qwen3_video(w, h, frames, fps)})
# Qwen2.5-Omni video with its sound track (use_audio_in_video): frames and
# audio of equal and unequal lengths, audio past the 300-s window, and a
# sound track too short to give a token
for w, h, frames, secs, rate in [(640, 360, 300, 10, 48000), (64, 64, 10, 1, 44100), (1920, 1080, 7, 1, 16000),
                                 (1280, 720, 900, 30, 48000), (640, 480, 60, 2, 48000), (640, 480, 60, 61.5, 44100),
                                 (320, 240, 2, 400, 16000), (640, 360, 3, 0.01, 48000), (4096, 2160, 1, 5, 22050),
                                 (640, 360, 64, 4.1, 8000), (640, 360, 5000, 300.01, 48000)]:
    cases.append({"model": "Qwen/Qwen2.5-Omni-7B", "kind": "video", "width": w, "height": h, "frames": frames,
                  "seconds": secs, "rate": rate, "use_audio_in_video": True,
                  "tokens": omni_video_with_audio(w, h, frames, secs, rate)})
# LLaVA-OneVision: canvases' edges and the max-9 downscale's threshold
for h, w in [(384, 384), (385, 385), (768, 768), (1152, 1152), (1153, 944), (944, 1153), (1536, 1536),
             (2304, 2304), (2305, 2305), (384, 2304), (2304, 384), (600, 800), (720, 1280), (1080, 1920),
             (3000, 100), (100, 3000), (5000, 5000), (1, 1), (7, 4000), (1000, 1001)]:
    cases.append({"model": "llava-hf/llava-onevision-qwen2-7b-ov-hf", "kind": "image", "width": w, "height": h,
                  "tokens": llava_onevision(h, w)})
for w, h, frames in [(640, 360, 1), (640, 360, 16), (1920, 1080, 32), (64, 64, 33), (1280, 720, 900)]:
    cases.append({"model": "llava-hf/llava-onevision-qwen2-7b-ov-hf", "kind": "video", "width": w, "height": h,
                  "frames": frames, "fps": 30, "tokens": llava_onevision_video(frames)})
json.dump(cases, __import__("sys").stdout, indent=0)
print()
