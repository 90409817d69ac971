#!/bin/sh
# Regenerates the media fixtures and facts.json, their facts as independent
# readers report them: PIL (Debian python3-pil) for images, soxi for audio.
# Needs /usr/bin/python3 with python3-pil, sox with libsox-fmt-mp3, and lame.
set -eu
cd "$(dirname "$0")"
/usr/bin/python3 - <<'PY'
from PIL import Image, ImageDraw
def pic(w, h, mode="RGB"):
    im = Image.new(mode, (w, h))
    d = ImageDraw.Draw(im)
    for i in range(0, max(w, h), 7):
        d.line([(i, 0), (0, i)], fill=(i * 3 % 256, i * 5 % 256, 200) if mode != "L" else i % 256)
    return im
pic(97, 61).save("rgb_97x61.png")
pic(33, 200).convert("P", palette=Image.ADAPTIVE, colors=16).save("palette_33x200.png")
pic(64, 48, "RGBA").save("rgba_64x48.png")
pic(50, 30).save("interlaced_50x30.png", interlace=1)
pic(121, 80).save("baseline_121x80.jpg", quality=80)
pic(300, 17).save("progressive_300x17.jpg", progressive=True, quality=60)
pic(1, 1).save("one_1x1.jpg")
pic(77, 41).save("lossy_77x41.webp", quality=60)
pic(40, 90).save("lossless_40x90.webp", lossless=True)
a, b = pic(32, 24), pic(32, 24).rotate(90)
a.save("anim_32x24.webp", save_all=True, append_images=[b], duration=100)
a.save("anim_32x24.gif", save_all=True, append_images=[b, a], duration=100)
pic(5, 3, "L").save("gray_5x3.gif")
pic(45, 23).save("rgb_45x23.bmp")
pic(45, 23).save("rgb_45x23.tif")
pic(45, 23).convert("L").save("gray_45x23_lzw.tif", compression="tiff_lzw")
PY
sox -n -r 16000 -c 1 -b 16 tone_1s_16k.wav synth 1 sine 440
sox -n -r 8000 -c 2 -b 16 tone_100ms_8k_stereo.wav synth 0.1 sine 300
sox -n -r 44100 -c 2 -C 32 tone_2s_44k.mp3 synth 2 sine 440
sox -n -r 16000 -c 1 -C 16 tone_1500ms_16k.mp3 synth 1.5 sine 440
sox -n -r 22050 -c 1 tone_3s_22k.flac synth 3 sine 440
# LAME (Debian's lame) writes a Xing header with the encoder delay and
# padding; -V 7 also resamples to 32 kHz.
sox -n -r 44100 -c 2 -b 16 "${TMPDIR:-/tmp}/lame-src.wav" synth 1.3 sine 500
lame --quiet -V 7 "${TMPDIR:-/tmp}/lame-src.wav" tone_1300ms_44k_lame.mp3
sox -n -r 16000 -c 1 tone_2500ms_16k.ogg synth 2.5 sine 440
/usr/bin/python3 - <<'PY' > facts.json
import json, os, subprocess
from PIL import Image
out = {}
for f in sorted(os.listdir(".")):
    ext = f.rsplit(".", 1)[-1]
    if ext in ("png", "jpg", "webp", "gif", "bmp", "tif"):
        im = Image.open(f)
        out[f] = {"width": im.size[0], "height": im.size[1], "frames": getattr(im, "n_frames", 1)}
    elif ext in ("wav", "mp3", "flac", "ogg"):
        q = lambda o: subprocess.check_output(["soxi", o, f], text=True).strip()
        out[f] = {"rate": int(q("-r")), "channels": int(q("-c")), "samples": int(q("-s"))}
print(json.dumps(out, indent=1, sort_keys=True))
PY
