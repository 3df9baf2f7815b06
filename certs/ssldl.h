/*
 * ssldl.h - OpenSSL for moatd, loaded with dlopen(3) when first needed
 * instead of linked: linked, libssl and libcrypto cost every start of
 * moatd about 0.7 ms of CPU (their relocations), 1.8-2 ms of a
 * `moat run`, whose private moatd has no TLS to do unless its policy
 * intercepts.
 *
 * Include this instead of the OpenSSL headers, and after every other
 * OpenSSL header (it includes those moat uses): each OpenSSL function
 * moat calls is then called through struct ssldl, whose pointers are
 * filled from SSL_SONAME by ssldl_get() on its first call (once, under
 * pthread_once) or by ssldl_load() earlier.  The same library, the same
 * calls: only the way to them differs.  Callers that know they will need
 * it load it where an error can be reported and no worker waits: moatd
 * when its config has a CA (tls_new), secrets (Basic credentials),
 * listeners with logins (Basic decoding) or a hash-chained audit
 * (auditchain_new), all in the main thread.
 *
 * A function missing from the list below is a link error for moatd
 * (which links no OpenSSL); one listed twice or not declared by the
 * headers, a compile error.
 */
#ifndef MOAT_SSLDL_H
#define MOAT_SSLDL_H

#include <stddef.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define SSLDL_FUNCTIONS(X) \
	X(ASN1_BIT_STRING_free) \
	X(ASN1_BIT_STRING_new) \
	X(ASN1_BIT_STRING_set_bit) \
	X(ASN1_IA5STRING_free) \
	X(ASN1_IA5STRING_new) \
	X(ASN1_INTEGER_free) \
	X(ASN1_INTEGER_new) \
	X(ASN1_INTEGER_set) \
	X(ASN1_OBJECT_free) \
	X(ASN1_OCTET_STRING_dup) \
	X(ASN1_OCTET_STRING_free) \
	X(ASN1_OCTET_STRING_new) \
	X(ASN1_OCTET_STRING_set) \
	X(ASN1_STRING_get0_data) \
	X(ASN1_STRING_length) \
	X(ASN1_STRING_set) \
	X(ASN1_TIME_set) \
	X(ASN1_TIME_to_tm) \
	X(AUTHORITY_KEYID_free) \
	X(AUTHORITY_KEYID_new) \
	X(BASIC_CONSTRAINTS_free) \
	X(BASIC_CONSTRAINTS_new) \
	X(BIO_clear_flags) \
	X(BIO_ctrl) \
	X(BIO_free) \
	X(BIO_get_data) \
	X(BIO_get_new_index) \
	X(BIO_meth_new) \
	X(BIO_meth_set_create) \
	X(BIO_meth_set_ctrl) \
	X(BIO_meth_set_read) \
	X(BIO_meth_set_write) \
	X(BIO_new) \
	X(BIO_new_mem_buf) \
	X(BIO_s_mem) \
	X(BIO_s_secmem) \
	X(BIO_set_data) \
	X(BIO_set_flags) \
	X(BIO_set_init) \
	X(BN_free) \
	X(BN_is_zero) \
	X(BN_new) \
	X(BN_rand) \
	X(BN_to_ASN1_INTEGER) \
	X(CRYPTO_get_ex_new_index) \
	X(CRYPTO_secure_clear_free) \
	X(CRYPTO_secure_malloc) \
	X(CRYPTO_secure_zalloc) \
	X(ERR_clear_error) \
	X(ERR_error_string_n) \
	X(ERR_get_error) \
	X(ERR_peek_error) \
	X(ERR_peek_last_error) \
	X(ERR_reason_error_string) \
	X(EVP_DecodeBlock) \
	X(EVP_Digest) \
	X(EVP_DigestFinal_ex) \
	X(EVP_DigestInit_ex) \
	X(EVP_DigestUpdate) \
	X(EVP_EncodeBlock) \
	X(EVP_MD_CTX_free) \
	X(EVP_MD_CTX_new) \
	X(EVP_PKEY_Q_keygen) \
	X(EVP_PKEY_free) \
	X(EVP_PKEY_get0_type_name) \
	X(EVP_PKEY_is_a) \
	X(EVP_sha1) \
	X(EVP_sha256) \
	X(GENERAL_NAMES_free) \
	X(GENERAL_NAMES_new) \
	X(GENERAL_NAME_free) \
	X(GENERAL_NAME_new) \
	X(GENERAL_NAME_set0_value) \
	X(OBJ_nid2obj) \
	X(OBJ_txt2obj) \
	X(OPENSSL_cleanse) \
	X(OPENSSL_sk_free) \
	X(OPENSSL_sk_new_null) \
	X(OPENSSL_sk_num) \
	X(OPENSSL_sk_pop) \
	X(OPENSSL_sk_pop_free) \
	X(OPENSSL_sk_push) \
	X(OPENSSL_sk_set) \
	X(OPENSSL_sk_value) \
	X(PEM_read_bio_PrivateKey) \
	X(PEM_read_bio_X509) \
	X(PEM_write_bio_PKCS8PrivateKey) \
	X(PEM_write_bio_X509) \
	X(PKCS12_SAFEBAG_create_cert) \
	X(PKCS12_SAFEBAG_free) \
	X(PKCS12_add1_attr_by_txt) \
	X(PKCS12_add_friendlyname_asc) \
	X(PKCS12_add_safes) \
	X(PKCS12_free) \
	X(PKCS12_pack_p7data) \
	X(PKCS7_free) \
	X(SSL_CTX_ctrl) \
	X(SSL_CTX_free) \
	X(SSL_CTX_load_verify_locations) \
	X(SSL_CTX_new) \
	X(SSL_CTX_sess_set_new_cb) \
	X(SSL_CTX_set_alpn_protos) \
	X(SSL_CTX_set_alpn_select_cb) \
	X(SSL_CTX_set_default_verify_paths) \
	X(SSL_CTX_set_options) \
	X(SSL_CTX_set_verify) \
	X(SSL_SESSION_free) \
	X(SSL_ctrl) \
	X(SSL_do_handshake) \
	X(SSL_free) \
	X(SSL_get0_param) \
	X(SSL_get_error) \
	X(SSL_get_ex_data) \
	X(SSL_get_verify_result) \
	X(SSL_has_pending) \
	X(SSL_is_init_finished) \
	X(SSL_new) \
	X(SSL_read) \
	X(SSL_set1_host) \
	X(SSL_set_accept_state) \
	X(SSL_set_bio) \
	X(SSL_set_connect_state) \
	X(SSL_set_ex_data) \
	X(SSL_set_session) \
	X(SSL_shutdown) \
	X(SSL_use_PrivateKey) \
	X(SSL_use_certificate) \
	X(SSL_write) \
	X(TLS_client_method) \
	X(TLS_server_method) \
	X(X509V3_EXT_i2d) \
	X(X509_EXTENSION_free) \
	X(X509_NAME_add_entry_by_NID) \
	X(X509_NAME_free) \
	X(X509_NAME_new) \
	X(X509_PUBKEY_free) \
	X(X509_PUBKEY_get0_param) \
	X(X509_PUBKEY_set) \
	X(X509_VERIFY_PARAM_set1_ip_asc) \
	X(X509_add_ext) \
	X(X509_check_private_key) \
	X(X509_check_purpose) \
	X(X509_cmp) \
	X(X509_digest) \
	X(X509_free) \
	X(X509_get0_notAfter) \
	X(X509_get0_notBefore) \
	X(X509_get0_subject_key_id) \
	X(X509_get_ext_d2i) \
	X(X509_get_extension_flags) \
	X(X509_get_key_usage) \
	X(X509_get_subject_name) \
	X(X509_getm_notAfter) \
	X(X509_getm_notBefore) \
	X(X509_new) \
	X(X509_set_issuer_name) \
	X(X509_set_pubkey) \
	X(X509_set_serialNumber) \
	X(X509_set_subject_name) \
	X(X509_set_version) \
	X(X509_sign) \
	X(X509_time_adj_ex) \
	X(X509_up_ref) \
	X(X509_verify_cert_error_string) \
	X(i2d_PKCS12)

struct ssldl {
#define SSLDL_MEMBER(name)	__typeof__(name) *name;
	SSLDL_FUNCTIONS(SSLDL_MEMBER)
#undef SSLDL_MEMBER
};

/*
 * Loads OpenSSL if it is not yet.  Returns 0, or -1 with a message in
 * err (the library or one of its functions could not be found).
 */
int			 ssldl_load(char *err, size_t errlen);
/* The functions; loads them first if need be (and aborts if it cannot). */
const struct ssldl	*ssldl_get(void);

/* Every call to one of them goes through the table (not in ssldl.c). */
#ifndef SSLDL_IMPLEMENTATION
#define ASN1_BIT_STRING_free		(*ssldl_get()->ASN1_BIT_STRING_free)
#define ASN1_BIT_STRING_new		(*ssldl_get()->ASN1_BIT_STRING_new)
#define ASN1_BIT_STRING_set_bit		(*ssldl_get()->ASN1_BIT_STRING_set_bit)
#define ASN1_IA5STRING_free		(*ssldl_get()->ASN1_IA5STRING_free)
#define ASN1_IA5STRING_new		(*ssldl_get()->ASN1_IA5STRING_new)
#define ASN1_INTEGER_free		(*ssldl_get()->ASN1_INTEGER_free)
#define ASN1_INTEGER_new		(*ssldl_get()->ASN1_INTEGER_new)
#define ASN1_INTEGER_set		(*ssldl_get()->ASN1_INTEGER_set)
#define ASN1_OBJECT_free		(*ssldl_get()->ASN1_OBJECT_free)
#define ASN1_OCTET_STRING_dup		(*ssldl_get()->ASN1_OCTET_STRING_dup)
#define ASN1_OCTET_STRING_free		(*ssldl_get()->ASN1_OCTET_STRING_free)
#define ASN1_OCTET_STRING_new		(*ssldl_get()->ASN1_OCTET_STRING_new)
#define ASN1_OCTET_STRING_set		(*ssldl_get()->ASN1_OCTET_STRING_set)
#define ASN1_STRING_get0_data		(*ssldl_get()->ASN1_STRING_get0_data)
#define ASN1_STRING_length		(*ssldl_get()->ASN1_STRING_length)
#define ASN1_STRING_set			(*ssldl_get()->ASN1_STRING_set)
#define ASN1_TIME_set			(*ssldl_get()->ASN1_TIME_set)
#define ASN1_TIME_to_tm			(*ssldl_get()->ASN1_TIME_to_tm)
#define AUTHORITY_KEYID_free		(*ssldl_get()->AUTHORITY_KEYID_free)
#define AUTHORITY_KEYID_new		(*ssldl_get()->AUTHORITY_KEYID_new)
#define BASIC_CONSTRAINTS_free		(*ssldl_get()->BASIC_CONSTRAINTS_free)
#define BASIC_CONSTRAINTS_new		(*ssldl_get()->BASIC_CONSTRAINTS_new)
#define BIO_clear_flags			(*ssldl_get()->BIO_clear_flags)
#define BIO_ctrl			(*ssldl_get()->BIO_ctrl)
#define BIO_free			(*ssldl_get()->BIO_free)
#define BIO_get_data			(*ssldl_get()->BIO_get_data)
#define BIO_get_new_index		(*ssldl_get()->BIO_get_new_index)
#define BIO_meth_new			(*ssldl_get()->BIO_meth_new)
#define BIO_meth_set_create		(*ssldl_get()->BIO_meth_set_create)
#define BIO_meth_set_ctrl		(*ssldl_get()->BIO_meth_set_ctrl)
#define BIO_meth_set_read		(*ssldl_get()->BIO_meth_set_read)
#define BIO_meth_set_write		(*ssldl_get()->BIO_meth_set_write)
#define BIO_new				(*ssldl_get()->BIO_new)
#define BIO_new_mem_buf			(*ssldl_get()->BIO_new_mem_buf)
#define BIO_s_mem			(*ssldl_get()->BIO_s_mem)
#define BIO_s_secmem			(*ssldl_get()->BIO_s_secmem)
#define BIO_set_data			(*ssldl_get()->BIO_set_data)
#define BIO_set_flags			(*ssldl_get()->BIO_set_flags)
#define BIO_set_init			(*ssldl_get()->BIO_set_init)
#define BN_free				(*ssldl_get()->BN_free)
#define BN_is_zero			(*ssldl_get()->BN_is_zero)
#define BN_new				(*ssldl_get()->BN_new)
#define BN_rand				(*ssldl_get()->BN_rand)
#define BN_to_ASN1_INTEGER		(*ssldl_get()->BN_to_ASN1_INTEGER)
#define CRYPTO_get_ex_new_index		(*ssldl_get()->CRYPTO_get_ex_new_index)
#define CRYPTO_secure_clear_free	(*ssldl_get()->CRYPTO_secure_clear_free)
#define CRYPTO_secure_malloc		(*ssldl_get()->CRYPTO_secure_malloc)
#define CRYPTO_secure_zalloc		(*ssldl_get()->CRYPTO_secure_zalloc)
#define ERR_clear_error			(*ssldl_get()->ERR_clear_error)
#define ERR_error_string_n		(*ssldl_get()->ERR_error_string_n)
#define ERR_get_error			(*ssldl_get()->ERR_get_error)
#define ERR_peek_error			(*ssldl_get()->ERR_peek_error)
#define ERR_peek_last_error		(*ssldl_get()->ERR_peek_last_error)
#define ERR_reason_error_string		(*ssldl_get()->ERR_reason_error_string)
#define EVP_DecodeBlock			(*ssldl_get()->EVP_DecodeBlock)
#define EVP_Digest			(*ssldl_get()->EVP_Digest)
#define EVP_DigestFinal_ex		(*ssldl_get()->EVP_DigestFinal_ex)
#define EVP_DigestInit_ex		(*ssldl_get()->EVP_DigestInit_ex)
#define EVP_DigestUpdate		(*ssldl_get()->EVP_DigestUpdate)
#define EVP_EncodeBlock			(*ssldl_get()->EVP_EncodeBlock)
#define EVP_MD_CTX_free			(*ssldl_get()->EVP_MD_CTX_free)
#define EVP_MD_CTX_new			(*ssldl_get()->EVP_MD_CTX_new)
#define EVP_PKEY_Q_keygen		(*ssldl_get()->EVP_PKEY_Q_keygen)
#define EVP_PKEY_free			(*ssldl_get()->EVP_PKEY_free)
#define EVP_PKEY_get0_type_name		(*ssldl_get()->EVP_PKEY_get0_type_name)
#define EVP_PKEY_is_a			(*ssldl_get()->EVP_PKEY_is_a)
#define EVP_sha1			(*ssldl_get()->EVP_sha1)
#define EVP_sha256			(*ssldl_get()->EVP_sha256)
#define GENERAL_NAMES_free		(*ssldl_get()->GENERAL_NAMES_free)
#define GENERAL_NAMES_new		(*ssldl_get()->GENERAL_NAMES_new)
#define GENERAL_NAME_free		(*ssldl_get()->GENERAL_NAME_free)
#define GENERAL_NAME_new		(*ssldl_get()->GENERAL_NAME_new)
#define GENERAL_NAME_set0_value		(*ssldl_get()->GENERAL_NAME_set0_value)
#define OBJ_nid2obj			(*ssldl_get()->OBJ_nid2obj)
#define OBJ_txt2obj			(*ssldl_get()->OBJ_txt2obj)
#define OPENSSL_cleanse			(*ssldl_get()->OPENSSL_cleanse)
#define OPENSSL_sk_free			(*ssldl_get()->OPENSSL_sk_free)
#define OPENSSL_sk_new_null		(*ssldl_get()->OPENSSL_sk_new_null)
#define OPENSSL_sk_num			(*ssldl_get()->OPENSSL_sk_num)
#define OPENSSL_sk_pop			(*ssldl_get()->OPENSSL_sk_pop)
#define OPENSSL_sk_pop_free		(*ssldl_get()->OPENSSL_sk_pop_free)
#define OPENSSL_sk_push			(*ssldl_get()->OPENSSL_sk_push)
#define OPENSSL_sk_set			(*ssldl_get()->OPENSSL_sk_set)
#define OPENSSL_sk_value		(*ssldl_get()->OPENSSL_sk_value)
#define PEM_read_bio_PrivateKey		(*ssldl_get()->PEM_read_bio_PrivateKey)
#define PEM_read_bio_X509		(*ssldl_get()->PEM_read_bio_X509)
#define PEM_write_bio_PKCS8PrivateKey	(*ssldl_get()->PEM_write_bio_PKCS8PrivateKey)
#define PEM_write_bio_X509		(*ssldl_get()->PEM_write_bio_X509)
#define PKCS12_SAFEBAG_create_cert	(*ssldl_get()->PKCS12_SAFEBAG_create_cert)
#define PKCS12_SAFEBAG_free		(*ssldl_get()->PKCS12_SAFEBAG_free)
#define PKCS12_add1_attr_by_txt		(*ssldl_get()->PKCS12_add1_attr_by_txt)
#define PKCS12_add_friendlyname_asc	(*ssldl_get()->PKCS12_add_friendlyname_asc)
#define PKCS12_add_safes		(*ssldl_get()->PKCS12_add_safes)
#define PKCS12_free			(*ssldl_get()->PKCS12_free)
#define PKCS12_pack_p7data		(*ssldl_get()->PKCS12_pack_p7data)
#define PKCS7_free			(*ssldl_get()->PKCS7_free)
#define SSL_CTX_ctrl			(*ssldl_get()->SSL_CTX_ctrl)
#define SSL_CTX_free			(*ssldl_get()->SSL_CTX_free)
#define SSL_CTX_load_verify_locations	(*ssldl_get()->SSL_CTX_load_verify_locations)
#define SSL_CTX_new			(*ssldl_get()->SSL_CTX_new)
#define SSL_CTX_sess_set_new_cb		(*ssldl_get()->SSL_CTX_sess_set_new_cb)
#define SSL_CTX_set_alpn_protos		(*ssldl_get()->SSL_CTX_set_alpn_protos)
#define SSL_CTX_set_alpn_select_cb	(*ssldl_get()->SSL_CTX_set_alpn_select_cb)
#define SSL_CTX_set_default_verify_paths	(*ssldl_get()->SSL_CTX_set_default_verify_paths)
#define SSL_CTX_set_options		(*ssldl_get()->SSL_CTX_set_options)
#define SSL_CTX_set_verify		(*ssldl_get()->SSL_CTX_set_verify)
#define SSL_SESSION_free		(*ssldl_get()->SSL_SESSION_free)
#define SSL_ctrl			(*ssldl_get()->SSL_ctrl)
#define SSL_do_handshake		(*ssldl_get()->SSL_do_handshake)
#define SSL_free			(*ssldl_get()->SSL_free)
#define SSL_get0_param			(*ssldl_get()->SSL_get0_param)
#define SSL_get_error			(*ssldl_get()->SSL_get_error)
#define SSL_get_ex_data			(*ssldl_get()->SSL_get_ex_data)
#define SSL_get_verify_result		(*ssldl_get()->SSL_get_verify_result)
#define SSL_has_pending			(*ssldl_get()->SSL_has_pending)
#define SSL_is_init_finished		(*ssldl_get()->SSL_is_init_finished)
#define SSL_new				(*ssldl_get()->SSL_new)
#define SSL_read			(*ssldl_get()->SSL_read)
#define SSL_set1_host			(*ssldl_get()->SSL_set1_host)
#define SSL_set_accept_state		(*ssldl_get()->SSL_set_accept_state)
#define SSL_set_bio			(*ssldl_get()->SSL_set_bio)
#define SSL_set_connect_state		(*ssldl_get()->SSL_set_connect_state)
#define SSL_set_ex_data			(*ssldl_get()->SSL_set_ex_data)
#define SSL_set_session			(*ssldl_get()->SSL_set_session)
#define SSL_shutdown			(*ssldl_get()->SSL_shutdown)
#define SSL_use_PrivateKey		(*ssldl_get()->SSL_use_PrivateKey)
#define SSL_use_certificate		(*ssldl_get()->SSL_use_certificate)
#define SSL_write			(*ssldl_get()->SSL_write)
#define TLS_client_method		(*ssldl_get()->TLS_client_method)
#define TLS_server_method		(*ssldl_get()->TLS_server_method)
#define X509V3_EXT_i2d			(*ssldl_get()->X509V3_EXT_i2d)
#define X509_EXTENSION_free		(*ssldl_get()->X509_EXTENSION_free)
#define X509_NAME_add_entry_by_NID	(*ssldl_get()->X509_NAME_add_entry_by_NID)
#define X509_NAME_free			(*ssldl_get()->X509_NAME_free)
#define X509_NAME_new			(*ssldl_get()->X509_NAME_new)
#define X509_PUBKEY_free		(*ssldl_get()->X509_PUBKEY_free)
#define X509_PUBKEY_get0_param		(*ssldl_get()->X509_PUBKEY_get0_param)
#define X509_PUBKEY_set			(*ssldl_get()->X509_PUBKEY_set)
#define X509_VERIFY_PARAM_set1_ip_asc	(*ssldl_get()->X509_VERIFY_PARAM_set1_ip_asc)
#define X509_add_ext			(*ssldl_get()->X509_add_ext)
#define X509_check_private_key		(*ssldl_get()->X509_check_private_key)
#define X509_check_purpose		(*ssldl_get()->X509_check_purpose)
#define X509_cmp			(*ssldl_get()->X509_cmp)
#define X509_digest			(*ssldl_get()->X509_digest)
#define X509_free			(*ssldl_get()->X509_free)
#define X509_get0_notAfter		(*ssldl_get()->X509_get0_notAfter)
#define X509_get0_notBefore		(*ssldl_get()->X509_get0_notBefore)
#define X509_get0_subject_key_id	(*ssldl_get()->X509_get0_subject_key_id)
#define X509_get_ext_d2i		(*ssldl_get()->X509_get_ext_d2i)
#define X509_get_extension_flags	(*ssldl_get()->X509_get_extension_flags)
#define X509_get_key_usage		(*ssldl_get()->X509_get_key_usage)
#define X509_get_subject_name		(*ssldl_get()->X509_get_subject_name)
#define X509_getm_notAfter		(*ssldl_get()->X509_getm_notAfter)
#define X509_getm_notBefore		(*ssldl_get()->X509_getm_notBefore)
#define X509_new			(*ssldl_get()->X509_new)
#define X509_set_issuer_name		(*ssldl_get()->X509_set_issuer_name)
#define X509_set_pubkey			(*ssldl_get()->X509_set_pubkey)
#define X509_set_serialNumber		(*ssldl_get()->X509_set_serialNumber)
#define X509_set_subject_name		(*ssldl_get()->X509_set_subject_name)
#define X509_set_version		(*ssldl_get()->X509_set_version)
#define X509_sign			(*ssldl_get()->X509_sign)
#define X509_time_adj_ex		(*ssldl_get()->X509_time_adj_ex)
#define X509_up_ref			(*ssldl_get()->X509_up_ref)
#define X509_verify_cert_error_string	(*ssldl_get()->X509_verify_cert_error_string)
#define i2d_PKCS12			(*ssldl_get()->i2d_PKCS12)
#endif /* SSLDL_IMPLEMENTATION */

#endif /* MOAT_SSLDL_H */
