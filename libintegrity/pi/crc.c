/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Portable CRCs (slicing-by-8 tables built once at first use) and the IP
 * checksum; the lowest of the CRC files: the folding ones fall back on it.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crc.h"
#include "internal.h"

#define CRC16_T10DIF_POLY	0x8BB7u
#define CRC32C_POLY_REFL	0x82F63B78u
#define CRC64_NVME_POLY_REFL	0x9A6C9329AC4BC9B5ull

/* 32-bit entries: 16-bit arithmetic makes slower code on x86. */
static uint32_t crc16_table[8][256];
static uint32_t crc32c_table[8][256];
static uint64_t crc64_table[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_build(void)
{
	for (unsigned b = 0; b < 256; b++) {
		uint32_t c16 = b << 8;
		uint32_t c32 = b;
		uint64_t c64 = b;

		for (int i = 0; i < 8; i++) {
			c16 = (c16 & 0x8000 ? c16 << 1 ^ CRC16_T10DIF_POLY : c16 << 1) & 0xffff;
			c32 = c32 & 1 ? (c32 >> 1) ^ CRC32C_POLY_REFL : c32 >> 1;
			c64 = c64 & 1 ? (c64 >> 1) ^ CRC64_NVME_POLY_REFL : c64 >> 1;
		}
		crc16_table[0][b] = c16;
		crc32c_table[0][b] = c32;
		crc64_table[0][b] = c64;
	}
	/* Table k: the CRC of a byte followed by k zero bytes. */
	for (int k = 1; k < 8; k++) {
		for (unsigned b = 0; b < 256; b++) {
			uint32_t c16 = crc16_table[k - 1][b];
			uint32_t c32 = crc32c_table[k - 1][b];
			uint64_t c64 = crc64_table[k - 1][b];

			crc16_table[k][b] = ((c16 << 8) & 0xffff) ^ crc16_table[0][c16 >> 8];
			crc32c_table[k][b] = (c32 >> 8) ^ crc32c_table[0][c32 & 0xff];
			crc64_table[k][b] = (c64 >> 8) ^ crc64_table[0][c64 & 0xff];
		}
	}
}

static inline void tables_init(void)
{
	pthread_once(&tables_once, tables_build);
}

/* Eight message bytes as one word: little-endian for the reflected CRCs,
 * big-endian for the MSB-first one, so a CRC state XORs straight in. */
static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint64_t load_be64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* The XORs are grouped as a tree to keep the loop-carried chain short. */
static uint16_t generic_crc16_t10dif(uint16_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	const uint32_t (*t)[256] = crc16_table;
	uint32_t c = crc;

	tables_init();
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v = load_be64(p) ^ (uint64_t)c << 48;

		c = ((t[7][v >> 56] ^ t[6][(v >> 48) & 0xff]) ^
		     (t[5][(v >> 40) & 0xff] ^ t[4][(v >> 32) & 0xff])) ^
		    ((t[3][(v >> 24) & 0xff] ^ t[2][(v >> 16) & 0xff]) ^
		     (t[1][(v >> 8) & 0xff] ^ t[0][v & 0xff]));
	}
	while (len--)
		c = ((c << 8) & 0xffff) ^ t[0][(c >> 8) ^ *p++];
	return (uint16_t)c;
}

static uint32_t generic_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	const uint32_t (*t)[256] = crc32c_table;

	tables_init();
	crc = ~crc;
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v = load_le64(p) ^ crc;

		crc = ((t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff]) ^
		       (t[5][(v >> 16) & 0xff] ^ t[4][(v >> 24) & 0xff])) ^
		      ((t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff]) ^
		       (t[1][(v >> 48) & 0xff] ^ t[0][v >> 56]));
	}
	while (len--)
		crc = (crc >> 8) ^ t[0][(crc & 0xff) ^ *p++];
	return ~crc;
}

static uint64_t generic_crc64_nvme(uint64_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	const uint64_t (*t)[256] = crc64_table;

	tables_init();
	crc = ~crc;
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v = load_le64(p) ^ crc;

		crc = ((t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff]) ^
		       (t[5][(v >> 16) & 0xff] ^ t[4][(v >> 24) & 0xff])) ^
		      ((t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff]) ^
		       (t[1][(v >> 48) & 0xff] ^ t[0][v >> 56]));
	}
	while (len--)
		crc = (crc >> 8) ^ t[0][(crc & 0xff) ^ *p++];
	return ~crc;
}

const struct crc_impl crc_impl_generic = {
	.name = "generic",
	.crc16_t10dif = generic_crc16_t10dif,
	.crc32c = generic_crc32c,
	.crc64_nvme = generic_crc64_nvme,
};

uint16_t ip_checksum(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t sum = 0;

	/* Sum native-order 32-bit words; a ones' complement sum does not
	 * depend on byte order up to a final swap.  Fold before the 64-bit
	 * accumulator could overflow (2^32 words). */
	while (len >= 4) {
		size_t chunk = len / 4 < (1u << 30) ? len / 4 : (1u << 30);
		uint64_t s0 = 0, s1 = 0;
		size_t i = 0;

		for (; i + 2 <= chunk; i += 2) {
			uint32_t w0, w1;

			memcpy(&w0, p + 4 * i, 4);
			memcpy(&w1, p + 4 * i + 4, 4);
			s0 += w0;
			s1 += w1;
		}
		for (; i < chunk; i++) {
			uint32_t w;

			memcpy(&w, p + 4 * i, 4);
			s0 += w;
		}
		sum = (sum & 0xffffffff) + (sum >> 32) + (s0 & 0xffffffff) + (s0 >> 32) +
		      (s1 & 0xffffffff) + (s1 >> 32);
		p += 4 * chunk;
		len -= 4 * chunk;
	}
	if (len >= 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		sum += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		/* The odd byte is the high byte of a zero-padded big-endian word. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		sum += p[0];
#else
		sum += (uint32_t)p[0] << 8;
#endif
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	sum = ((sum & 0xff) << 8) | (sum >> 8);
#endif
	return (uint16_t)~sum;
}
