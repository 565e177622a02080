"""The catalogue's mistakes found by a probe in any target, and those of the Transformer of
assignment 4 (its assembly, the shift, the training step, greedy decoding)."""

from autograder.checks.mistake import ANY, BLOCK_VALUES, MASKING, VALUES, _m
from autograder.checks.targets import GREEDY, SHIFT, TRAIN, TRANSFORMER

MISTAKES = [
    # found by a probe, in any target
    _m("inputs_modified_in_place", ANY,
       ("Masukan diubah di tempat (in-place), sehingga tensor milik pemanggil ikut berubah.",
        "An input is modified in place, so the caller's tensor changes too."),
       ("Cari `+=`, `*=`, `.mul_()`, `.masked_fill_()` atau penugasan ke potongan (`x[...] = `) "
        "pada argumen; buat tensor baru (`q = q * s`, `h = x + ...`).",
        "Look for `+=`, `*=`, `.mul_()`, `.masked_fill_()` or slice assignment (`x[...] = `) on an "
        "argument; make a new tensor instead (`q = q * s`, `h = x + ...`)."),
       (), {"inputs_untouched"}),
    _m("graph_detached", ANY,
       ("Nilainya benar, tetapi graf komputasi terputus: sebagian parameter atau masukan tidak "
        "mendapat gradien.",
        "The values are right but the computation graph is cut: some parameters or inputs get no "
        "gradient."),
       ("Cari `.detach()`, `.data`, `.item()`, `.numpy()`, `torch.no_grad()` atau tensor yang dibuat "
        "ulang dari angka di dalam forward.",
        "Look for `.detach()`, `.data`, `.item()`, `.numpy()`, `torch.no_grad()` or tensors rebuilt "
        "from numbers inside forward."),
       (), {"gradient_flow"}),
    _m("fixed_device", ANY,
       ("Tensor baru (mis. mask) dibuat di CPU, bukan di perangkat (device) masukan.",
        "A new tensor (e.g. the mask) is made on the CPU instead of on the input's device."),
       ("Buat tensor baru di perangkat masukan: `torch.ones(..., device=x.device)` atau "
        "`causal_mask(T).to(x.device)`; jangan menulis `device='cpu'`.",
        "Create new tensors on the input's device: `torch.ones(..., device=x.device)` or "
        "`causal_mask(T).to(x.device)`; never write `device='cpu'`."),
       (), {"device_agnostic"}),
    _m("wrong_default", ANY,
       ("Nilai bawaan (default) sebuah argumen berbeda dari kontrak: dibuat tanpa argumen itu, "
        "modul menghitung hal lain (mis. `prenorm=True`, padahal kontrak menulis `prenorm=False`).",
        "A default argument differs from the contract's: built without that keyword, the module "
        "computes something else (e.g. `prenorm=True` where the contract says `prenorm=False`)."),
       ("Salin tanda tangan persis seperti kontrak, termasuk nilai bawaannya (`EncoderBlock(d_model, "
        "num_heads, d_ff, prenorm=False)`): pemanggil yang tidak menulis argumen itu mendapat nilai "
        "bawaan kontrak.",
        "Copy the signature exactly as the contract writes it, defaults included (`EncoderBlock("
        "d_model, num_heads, d_ff, prenorm=False)`): a caller that leaves the keyword out gets the "
        "contract's default."),
       (), BLOCK_VALUES | {"permutation_equivariance"}),
    _m("float64_result", ANY,
       ("Nilainya benar, tetapi hasilnya bertipe float64 (presisi ganda), bukan float32: misalnya "
        "dibuat dengan NumPy (`np.zeros`, `torch.from_numpy`) atau dengan `dtype=torch.float64`.",
        "The values are right but the result is float64 (double precision), not float32: built "
        "with NumPy (`np.zeros`, `torch.from_numpy`), say, or with `dtype=torch.float64`."),
       ("Kembalikan float32: `torch.from_numpy(x).float()`, atau buat tensornya dengan "
        "`dtype=torch.float32` (untuk modul: dtype masukannya).",
        "Return float32: `torch.from_numpy(x).float()`, or make the tensor with "
        "`dtype=torch.float32` (in a module: its input's dtype)."),
       (), {"dtype"}),
    _m("float32_result", ANY,
       ("Kode tetap memakai float32 walau masukannya float64 (hasilnya float32, atau galat karena "
        "float dan double tercampur): di suatu tempat tensor dibuat atau diubah menjadi float32 "
        "(`.float()`, `dtype=torch.float32`, buffer float32).",
        "The code keeps float32 where the inputs are float64 (a float32 result, or an error for "
        "float and double mixed): somewhere a tensor is made in or cast to float32 (`.float()`, "
        "`dtype=torch.float32`, a float32 buffer)."),
       ("Ikuti dtype masukan: `torch.zeros(..., dtype=x.dtype)`, `.to(x)`, atau jangan mengubah "
        "dtype sama sekali; kode yang benar bekerja sama baiknya setelah `.double()`.",
        "Follow the input's dtype: `torch.zeros(..., dtype=x.dtype)`, `.to(x)`, or no cast at all; "
        "right code works just as well after `.double()`."),
       (), {"dtype"}),
    _m("squeezed_axes", ANY,
       ("Sumbu berukuran 1 dibuang (`.squeeze()`): batch 1, satu token, satu head atau d_k = 1 "
        "memberi bentuk yang salah.",
        "Size-1 axes are dropped (`.squeeze()`): a batch of one, one token, one head or d_k = 1 "
        "gives the wrong shape."),
       ("Jangan memakai `.squeeze()` tanpa sumbu; bentuk (B, T, D) dan (B, H, Tq, Tk) harus tetap "
        "utuh untuk ukuran berapa pun, termasuk 1.",
        "Do not use `.squeeze()` without an axis; the shapes (B, T, D) and (B, H, Tq, Tk) must stay "
        "whole for every size, 1 included."),
       (), {"hidden_config"}),
    _m("extra_axes", ANY,
       ("Hasilnya memiliki sumbu berukuran 1 tambahan (rank salah), mis. (1, 1, T, T) atau (1, T, T) "
        "padahal kontrak meminta (T, T), atau `(1, length, d_model)` padahal `(length, d_model)`; "
        "nilainya sendiri benar.",
        "The result has extra size-1 axes (the wrong rank), e.g. (1, 1, T, T) or (1, T, T) where the "
        "contract asks for (T, T), or `(1, length, d_model)` for `(length, d_model)`; its values are "
        "right."),
       ("Kembalikan bentuk yang ditulis kontrak, tanpa `[None, None]`, `unsqueeze(0)` atau "
        "`view(1, 1, T, T)`: penyiaran (broadcasting) di tempat pemakaian menambah sumbu itu sendiri.",
        "Return the shape the contract writes, without `[None, None]`, `unsqueeze(0)` or "
        "`view(1, 1, T, T)`: broadcasting where it is used adds those axes by itself."),
       (), VALUES | MASKING | {"shape"}, triggers={"shape"}),
    _m("batch_items_mixed", ANY,
       ("Item batch saling memengaruhi: keluaran satu item berubah ketika item lain berubah.",
        "Batch items influence each other: one item's output changes when another item changes."),
       ("Periksa `view`/`reshape`/`transpose` (tata letak (B, T, D), bukan (T, B, D)) dan sumbu "
        "`softmax`, `mean` atau `sum`: tak satu pun boleh melintasi sumbu batch.",
        "Check `view`/`reshape`/`transpose` (the (B, T, D) layout, not (T, B, D)) and the axis of "
        "`softmax`, `mean` or `sum`: none may run across the batch axis."),
       ("seq_first",), {"batch_independence"}),
    _m("dropout_in_eval", ANY,
       ("Dropout tetap aktif dalam mode evaluasi: dua panggilan dengan masukan yang sama memberi "
        "hasil berbeda.",
        "Dropout stays active in evaluation mode: two calls with the same input give different "
        "results."),
       ("Pakai `nn.Dropout` (mati sendiri setelah `.eval()`) atau "
        "`F.dropout(x, p, training=self.training)`.",
        "Use `nn.Dropout` (switched off by `.eval()`) or `F.dropout(x, p, training=self.training)`."),
       # random outputs fail every comparison, of two calls as well as with the reference
       (), VALUES | MASKING | {"dtype", "batch_independence", "rows_sum_to_one", "gradient_flow",
                               "permutation_equivariance", "causality", "memory_path",
                               "layernorm_stats"},
       triggers=VALUES | {"dtype", "batch_independence"}),
    _m("forward_returns_input", ANY,
       ("forward mengembalikan masukannya tanpa perubahan.", "forward returns its input unchanged."),
       ("Selesaikan forward: hitung sub-layer-nya dan kembalikan hasilnya, bukan `x`.",
        "Finish forward: compute the sub-layers and return their result, not `x`."),
       ["identity"], BLOCK_VALUES | {"shape", "sensitivity", "permutation_equivariance",
                                     "gradient_flow", "batch_independence", "causality",
                                     "memory_path"}),
    _m("equal_lengths_assumed", ANY,
       ("Kode mengandaikan Tq = Tk: benar bila kueri dan kunci sama panjang, salah bila tidak.",
        "The code assumes Tq = Tk: right when queries and keys have the same length, wrong "
        "otherwise."),
       ("Ambil setiap panjang dari tensornya sendiri: panjang kunci dari k (`k.size(1)`), bukan "
        "dari q; di decoder, mask kausal berukuran Tdec dari x (`x.size(1)`), bukan dari memori. "
        "Kueri dan memori (kunci) boleh berbeda panjang.",
        "Take each length from its own tensor: the key length from k (`k.size(1)`), not from q; in "
        "the decoder, the causal mask has size Tdec, from x (`x.size(1)`), not from the memory. "
        "Queries and the memory (keys) may have different lengths."),
       (), VALUES | MASKING | {"shape", "rows_sum_to_one", "gradient_flow", "batch_independence",
                               "dtype", "inputs_untouched", "device_agnostic",
                               "numeric_vs_reference", "memory_path", "causality"}),
    _m("hardcoded_sizes", ANY,
       ("Ukuran ditulis tetap: benar pada ukuran bab, salah pada ukuran lain.",
        "Sizes are hard-coded: right at the chapter's sizes, wrong at others."),
       ("Ambil setiap ukuran dari argumen (`d_model`, `num_heads`, `d_ff`) dan dari bentuk masukan "
        "(`x.size(1)`), bukan angka seperti 16, 4, 32 atau 5.",
        "Take every size from the arguments (`d_model`, `num_heads`, `d_ff`) and from the input's "
        "shape (`x.size(1)`), never numbers such as 16, 4, 32 or 5."),
       (), VALUES | {"shape", "param_count", "masking", "mask_convention"}),
    # assignment 4: the whole Transformer (probed in checks/transformer_variants.py)
    _m("tf.missing_sqrt", TRANSFORMER,
       ("Embedding tidak dikalikan √d_model.", "The embeddings are not multiplied by √d_model."),
       ("`embed(token) * math.sqrt(d_model) + PE[:T]`: tanpa skala itu, positional encoding "
        "(nilai ±1) menenggelamkan embedding (std d_model^-0.5).",
        "`embed(tokens) * math.sqrt(d_model) + PE[:T]`: without that scale the positional "
        "encoding (values ±1) drowns the embeddings (std d_model^-0.5)."),
       ["no_sqrt"]),
    _m("tf.missing_pe", TRANSFORMER,
       ("Positional encoding tidak ditambahkan.", "The positional encoding is not added."),
       ("Tanpa PE, encoder tidak tahu urutan token: membalik urutan mustahil. Tambahkan "
        "`positional_encoding(T, d_model)` setelah skala.",
        "Without PE the encoder cannot tell the order of the tokens: reversing is impossible. Add "
        "`positional_encoding(T, d_model)` after the scale."),
       ["no_pe"]),
    _m("tf.scale_after_pe", TRANSFORMER,
       ("√d_model mengalikan embedding + PE, bukan embedding saja.",
        "√d_model multiplies embedding + PE instead of the embedding alone."),
       ("Skala dulu, lalu tambahkan PE: `embed(token) * math.sqrt(d_model) + PE[:T]`.",
        "Scale first, then add PE: `embed(tokens) * math.sqrt(d_model) + PE[:T]`."),
       ["scale_after_pe"]),
    _m("tf.shared_block", TRANSFORMER,
       ("Satu objek blok dipakai untuk semua lapisan (bobotnya dibagi).",
        "One block object is used for every layer (its weights are shared)."),
       ("`nn.ModuleList([EncoderBlock(...) for _ in range(num_layers)])` membuat blok baru tiap "
        "lapisan; `[blok] * num_layers` mengulang objek yang sama.",
        "`nn.ModuleList([EncoderBlock(...) for _ in range(num_layers)])` builds a new block per "
        "layer; `[block] * num_layers` repeats one object."),
       ["shared_encoder"], VALUES | {"param_count"}),
    _m("tf.missing_final_norm", TRANSFORMER,
       ("LayerNorm akhir (enc_norm atau dec_norm) tidak dipakai.",
        "A final LayerNorm (enc_norm or dec_norm) is not applied."),
       ("memory = enc_norm(h) setelah blok encoder terakhir; logit = generator(dec_norm(g)). Pada "
        "pre-LN, keluaran blok terakhir belum dinormalkan.",
        "memory = enc_norm(h) after the last encoder block; logits = generator(dec_norm(g)). In "
        "pre-LN the last block's output is not normalised yet."),
       ["no_enc_norm", "no_dec_norm"]),
    _m("shift.off_by_one", SHIFT,
       ("shift_right menggeser salah: y_0 hilang.", "shift_right shifts wrong: y_0 is lost."),
       ("Masukan decoder adalah `[bos, y_0, ..., y_{T-2}]`: buang token **terakhir** (`y[:, :-1]`).",
        "The decoder input is `[bos, y_0, ..., y_{T-2}]`: drop the **last** token (`y[:, :-1]`)."),
       ["shift_drops_first"]),
    _m("shift.missing", SHIFT,
       ("shift_right tidak menggeser: decoder melihat token yang harus ditebaknya.",
        "shift_right does not shift: the decoder sees the token it has to predict."),
       ("Dengan teacher forcing, posisi t menerima y_{t-1} (BOS di posisi 0) dan menebak y_t.",
        "With teacher forcing position t gets y_{t-1} (BOS at position 0) and predicts y_t."),
       ["no_shift"]),
    _m("train.softmax_before_ce", TRAIN,
       ("Softmax dipakai sebelum cross_entropy.", "A softmax is applied before cross_entropy."),
       ("`F.cross_entropy` menerima logit mentah (ia menghitung log-softmax sendiri).",
        "`F.cross_entropy` takes raw logits (it computes the log-softmax itself)."),
       ["softmax_before_ce"]),
    _m("train.missing_zero_grad", TRAIN,
       ("optimizer.zero_grad() tidak dipanggil: gradien menumpuk dari langkah ke langkah.",
        "optimizer.zero_grad() is not called: gradients pile up from step to step."),
       ("Panggil `optimizer.zero_grad()` di awal setiap langkah, sebelum `backward()`.",
        "Call `optimizer.zero_grad()` at the start of every step, before `backward()`."),
       ["no_zero_grad"]),
    _m("greedy.all_positions", GREEDY,
       ("greedy_decode mengambil argmax semua posisi, bukan posisi terakhir saja.",
        "greedy_decode takes the argmax of every position, not only of the last one."),
       ("Setiap langkah menambahkan satu token: `logits[:, -1].argmax(-1)`.",
        "Every step appends one token: `logits[:, -1].argmax(-1)`."),
       ["all_positions"], VALUES | {"causality"}),
    _m("greedy.last_token_only", GREEDY,
       ("greedy_decode memberi decoder hanya token terakhir, bukan seluruh prefiks.",
        "greedy_decode gives the decoder only the last token, not the whole prefix."),
       ("`model.decode(out, memory)` dengan seluruh `out` (BOS dan token yang sudah dihasilkan).",
        "`model.decode(out, memory)` with all of `out` (BOS and the tokens generated so far)."),
       ["last_token_only"], VALUES | {"causality"}),
]
