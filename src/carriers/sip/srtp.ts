import { createCipheriv, createHmac, randomBytes, timingSafeEqual, type Cipher } from 'node:crypto';
import { inspect } from 'node:util';

/**
 * SRTP (RFC 3711) for SIP calls whose keys come in the SDP (SDES, RFC 4568): AES-128 in counter
 * mode with an HMAC-SHA1 tag of 80 or 32 bits, the rollover counter of each source kept as
 * RFC 3711 section 3.3.1 and appendix A say, and replayed packets dropped (a window of 64).
 * Openline sends no RTCP on SIP calls and ignores what comes, so there is no SRTCP here.
 */

/** The crypto suites Openline speaks, in the order it prefers them. */
export const SRTP_SUITES = ['AES_CM_128_HMAC_SHA1_80', 'AES_CM_128_HMAC_SHA1_32'] as const;
export type SrtpSuite = (typeof SRTP_SUITES)[number];

const TAG_BYTES: Record<SrtpSuite, number> = { AES_CM_128_HMAC_SHA1_80: 10, AES_CM_128_HMAC_SHA1_32: 4 };
const KEY_BYTES = 16;
const SALT_BYTES = 14;
/** How far back a packet may come and still be taken (once), in packets. */
const REPLAY_WINDOW = 64n;
/** Sources remembered per direction: a far end that keeps changing SSRC cannot grow the map. */
const MAX_SOURCES = 16;

export const isSrtpSuite = (name: string): name is SrtpSuite => (SRTP_SUITES as readonly string[]).includes(name);

/**
 * A master key and salt (30 bytes) for one suite, with the MKI its packets carry, if any. Its
 * bytes never reach a log: JSON and util.inspect show neither key nor salt.
 */
export class SrtpKey {
  readonly #material: Buffer;

  constructor(
    readonly suite: SrtpSuite,
    material: Buffer,
    /** The Master Key Identifier the packets carry before their tag (RFC 3711 section 3.1), if any. */
    readonly mki?: Buffer,
  ) {
    if (material.length !== KEY_BYTES + SALT_BYTES) throw new RangeError('an SRTP master key and salt are 30 bytes');
    this.#material = Buffer.from(material);
  }

  static random(suite: SrtpSuite): SrtpKey {
    return new SrtpKey(suite, randomBytes(KEY_BYTES + SALT_BYTES));
  }

  /** The key and salt as a=crypto's `inline:` carries them (base64). */
  get inline(): string {
    return this.#material.toString('base64');
  }

  get masterKey(): Buffer {
    return this.#material.subarray(0, KEY_BYTES);
  }

  get masterSalt(): Buffer {
    return this.#material.subarray(KEY_BYTES);
  }

  equals(other: SrtpKey): boolean {
    return (
      this.suite === other.suite &&
      this.#material.equals(other.#material) &&
      (this.mki ?? Buffer.alloc(0)).equals(other.mki ?? Buffer.alloc(0))
    );
  }

  toJSON(): string {
    return `[SRTP key ${this.suite}]`;
  }

  toString(): string {
    return this.toJSON();
  }

  [inspect.custom](): string {
    return this.toJSON();
  }
}

/** The session keys of one master key (RFC 3711 section 4.3, key derivation rate 0). */
export function deriveSessionKeys(
  masterKey: Buffer,
  masterSalt: Buffer,
): { cipherKey: Buffer; cipherSalt: Buffer; authKey: Buffer } {
  const derive = (label: number, length: number) => {
    // x = (label || index DIV kdr) XOR master salt, the index term 0; the keystream of AES-CM at x * 2^16.
    const iv = Buffer.alloc(16);
    masterSalt.copy(iv, 0, 0, SALT_BYTES);
    iv[7]! ^= label;
    return createCipheriv('aes-128-ctr', masterKey, iv).update(Buffer.alloc(length));
  };
  return { cipherKey: derive(0, KEY_BYTES), authKey: derive(1, 20), cipherSalt: derive(2, SALT_BYTES) };
}

/**
 * AES-128 in the counter mode of RFC 3711 section 4.1.1, encrypting and decrypting alike: the
 * keystream of IV = (salt * 2^16) XOR (SSRC * 2^64) XOR (index * 2^16), block counter in the
 * last 16 bits. One AES cipher serves every packet (its counter blocks encrypted in one go):
 * a cipher object made per packet costs more than the packet's encryption.
 */
export class AesCm {
  private readonly aes: Cipher;

  constructor(
    cipherKey: Buffer,
    private readonly cipherSalt: Buffer,
  ) {
    this.aes = createCipheriv('aes-128-ecb', cipherKey, null).setAutoPadding(false);
  }

  /** `data` XOR the keystream of the packet of this SSRC and index, written to `out` at `offset`. */
  apply(ssrc: number, index: number, data: Buffer, out: Buffer, offset: number): void {
    const blocks = Math.ceil(data.length / 16);
    const counters = Buffer.alloc(blocks * 16);
    this.cipherSalt.copy(counters, 0, 0, SALT_BYTES);
    counters.writeUInt32BE((counters.readUInt32BE(4) ^ ssrc) >>> 0, 4);
    counters.writeUInt32BE((counters.readUInt32BE(8) ^ Math.floor(index / 0x10000)) >>> 0, 8);
    counters.writeUInt16BE(counters.readUInt16BE(12) ^ (index % 0x10000), 12);
    for (let block = 1; block < blocks; block++) {
      counters.copy(counters, block * 16, 0, 14);
      counters.writeUInt16BE(block, block * 16 + 14);
    }
    const keystream = this.aes.update(counters);
    for (let i = 0; i < data.length; i++) out[offset + i] = data[i]! ^ keystream[i]!;
  }
}

/** The length of an RTP packet's header (with its CSRCs and extension); undefined when it has none. */
export function rtpHeaderLength(data: Buffer): number | undefined {
  if (data.length < 12 || data[0]! >> 6 !== 2) return undefined;
  let length = 12 + (data[0]! & 0x0f) * 4;
  if (data[0]! & 0x10) {
    if (data.length < length + 4) return undefined;
    length += 4 + data.readUInt16BE(length + 2) * 4;
  }
  return length <= data.length ? length : undefined;
}

/** One source's place in its stream: the rollover counter, the highest sequence number, the replay window. */
interface Source {
  roc: number;
  /** s_l of RFC 3711: the highest sequence number taken with this rollover counter. */
  seq: number;
  /** The highest packet index taken, and which of the 64 below it were (bit n: index - n). */
  highest: number;
  seen: bigint;
}

/**
 * One direction of an SRTP session: protect() what we send under our key, or unprotect() what
 * the far end sends under its key.
 */
export class SrtpContext {
  private readonly cipher: AesCm;
  private readonly authKey: Buffer;
  private readonly tagBytes: number;
  private readonly mki: Buffer;
  private readonly sources = new Map<number, Source>();

  constructor(readonly key: SrtpKey) {
    const session = deriveSessionKeys(key.masterKey, key.masterSalt);
    this.cipher = new AesCm(session.cipherKey, session.cipherSalt);
    this.authKey = session.authKey;
    this.tagBytes = TAG_BYTES[key.suite];
    this.mki = key.mki ?? Buffer.alloc(0);
  }

  /** An RTP packet made SRTP: its payload encrypted, the MKI and the authentication tag after it. */
  protect(packet: Buffer): Buffer {
    const headerLength = rtpHeaderLength(packet);
    if (headerLength === undefined) throw new RangeError('not an RTP packet');
    const ssrc = packet.readUInt32BE(8);
    const seq = packet.readUInt16BE(2);
    const source = this.sources.get(ssrc) ?? this.newSource(ssrc, seq);
    const roc = estimateRoc(source, seq);
    advance(source, roc, seq);
    const out = Buffer.allocUnsafe(packet.length + this.mki.length + this.tagBytes);
    packet.copy(out, 0, 0, headerLength);
    this.cipher.apply(ssrc, roc * 0x10000 + seq, packet.subarray(headerLength), out, headerLength);
    this.mki.copy(out, packet.length);
    this.tag(out.subarray(0, packet.length), roc).copy(out, packet.length + this.mki.length);
    return out;
  }

  /**
   * The RTP packet inside an SRTP one; undefined (and nothing learnt from it) when it fails
   * authentication, names another MKI, was taken before, or is no SRTP packet at all.
   */
  unprotect(packet: Buffer): Buffer | undefined {
    const end = packet.length - this.mki.length - this.tagBytes;
    if (end < 12) return undefined;
    const authenticated = packet.subarray(0, end);
    const headerLength = rtpHeaderLength(authenticated);
    if (headerLength === undefined) return undefined;
    if (!packet.subarray(end, end + this.mki.length).equals(this.mki)) return undefined;
    const ssrc = packet.readUInt32BE(8);
    const seq = packet.readUInt16BE(2);
    const known = this.sources.get(ssrc);
    const source = known ?? { roc: 0, seq, highest: -1, seen: 0n };
    const roc = estimateRoc(source, seq);
    if (roc < 0) return undefined;
    const index = roc * 0x10000 + seq;
    if (known && replayed(source, index)) return undefined;
    const tag = packet.subarray(end + this.mki.length);
    if (!timingSafeEqual(tag, this.tag(authenticated, roc))) return undefined;
    const out = Buffer.allocUnsafe(end);
    packet.copy(out, 0, 0, headerLength);
    this.cipher.apply(ssrc, index, packet.subarray(headerLength, end), out, headerLength);
    if (!known) this.remember(ssrc, source);
    advance(source, roc, seq);
    take(source, index);
    return out;
  }

  private tag(authenticated: Buffer, roc: number): Buffer {
    const rocBytes = Buffer.allocUnsafe(4);
    rocBytes.writeUInt32BE(roc >>> 0);
    return createHmac('sha1', this.authKey).update(authenticated).update(rocBytes).digest().subarray(0, this.tagBytes);
  }

  private newSource(ssrc: number, seq: number): Source {
    const source = { roc: 0, seq, highest: -1, seen: 0n };
    this.remember(ssrc, source);
    return source;
  }

  private remember(ssrc: number, source: Source): void {
    if (this.sources.size >= MAX_SOURCES) this.sources.delete(this.sources.keys().next().value!);
    this.sources.set(ssrc, source);
  }
}

/** The rollover counter of a packet with this sequence number (RFC 3711 appendix A). */
function estimateRoc(source: Source, seq: number): number {
  if (source.seq < 0x8000) return seq - source.seq > 0x8000 ? source.roc - 1 : source.roc;
  return source.seq - 0x8000 > seq ? source.roc + 1 : source.roc;
}

/** A packet taken: the rollover counter and s_l move on (RFC 3711 section 3.3.1). */
function advance(source: Source, roc: number, seq: number): void {
  if (roc === source.roc + 1) {
    source.roc = roc;
    source.seq = seq;
  } else if (roc === source.roc && seq > source.seq) source.seq = seq;
}

function replayed(source: Source, index: number): boolean {
  if (index > source.highest) return false;
  const behind = BigInt(source.highest - index);
  return behind >= REPLAY_WINDOW || ((source.seen >> behind) & 1n) === 1n;
}

function take(source: Source, index: number): void {
  const mask = (1n << REPLAY_WINDOW) - 1n;
  if (index > source.highest) {
    const ahead = source.highest < 0 ? REPLAY_WINDOW : BigInt(index - source.highest);
    source.seen = ahead >= REPLAY_WINDOW ? 1n : ((source.seen << ahead) | 1n) & mask;
    source.highest = index;
  } else source.seen |= 1n << BigInt(source.highest - index);
}

/** What a call's SRTP uses each way: our key for what we send, the far end's for what it sends. */
export interface SrtpKeys {
  send: SrtpKey;
  receive: SrtpKey;
}
